//go:build unix

package proxy_test

import (
	"syscall"
	"time"
)

// processCPU returns the user and system CPU time the process has used:
// on a shared machine, the cost of a loopback benchmark, whose wall time
// is mostly waiting.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
