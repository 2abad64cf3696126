//go:build race

package proxy_test

// raceEnabled: the race detector makes sync.Pool drop objects at random, so
// allocation counts are higher.
const raceEnabled = true
