//go:build race

package gate

// raceEnabled: the race detector makes sync.Pool drop objects at random,
// so a pooled Request and what it keeps are made again now and then.
const raceEnabled = true
