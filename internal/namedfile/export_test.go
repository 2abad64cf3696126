package namedfile

// Abandoned returns the count of reads abandoned in the kernel and a
// channel closed at its next change.
func Abandoned() (int, <-chan struct{}) { return abandoned.watch() }

// MaxAbandoned is maxAbandoned.
const MaxAbandoned = maxAbandoned
