//go:build race

package main

// raceEnabled: this binary was built with -race, and so are the binaries
// the smoke test builds (they then reuse the packages already compiled).
const raceEnabled = true
