package connlimit

import (
	"context"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"
)

// LogInterval is the least time between two log records of one refusal
// reason: a flood is counted, not logged line by line.
const LogInterval = 10 * time.Second

// reason is a refusal reason with its own log rate.
type reason uint8

const (
	reasonDeny reason = iota
	reasonCap
	reasonTableFull
	numReasons
)

var reasonMsg = [numReasons]string{
	reasonDeny:      "connections refused by the deny list",
	reasonCap:       "connections refused by the per-address cap",
	reasonTableFull: "connections admitted uncounted: table window full",
}

// refusalLog logs refusals at Info level, at most once per LogInterval per
// reason, with how many there were since the last record and the latest
// address. It allocates only when it writes a record.
type refusalLog struct {
	logger  *slog.Logger // nil: no logging
	now     func() time.Time
	last    [numReasons]atomic.Int64 // unix nanoseconds of the last record
	pending [numReasons]atomic.Uint64
}

func (g *refusalLog) note(r reason, addr netip.Addr, tr Transport) {
	if g.logger == nil {
		return
	}
	g.pending[r].Add(1)
	now := g.now().UnixNano()
	last := g.last[r].Load()
	if last != 0 && now-last < int64(LogInterval) || !g.last[r].CompareAndSwap(last, now) {
		return
	}
	n := g.pending[r].Swap(0)
	g.logger.LogAttrs(context.Background(), slog.LevelInfo, reasonMsg[r],
		slog.Uint64("count", n),
		slog.String("latest", addr.String()),
		slog.String("transport", tr.String()))
}
