//go:build race

package balance

// raceSlowdown is how many times the race detector slows the loopback fast
// path, roughly; timing-based measurements scale their delays by it.
const raceSlowdown = 5
