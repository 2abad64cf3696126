//go:build !race

package balance

const raceSlowdown = 1
