package telemetry

import (
	"context"
	"crypto/tls"
	"log/slog"
	"sync"
	"sync/atomic"
)

// DefaultAccessLogBuffer is the default number of records an [AccessLog]
// holds before it drops.
const DefaultAccessLogBuffer = 8192

// AccessLogConfig configures an [AccessLog].
type AccessLogConfig struct {
	// Logger receives one record per request, at level Info with the
	// message "request"; its handler decides the format
	// (slog.NewJSONHandler for JSON, slog.NewTextHandler for logfmt).
	Logger *slog.Logger
	// Buffer is the number of records waiting to be written; when it is
	// full a new record is dropped and counted, never waited for.
	// Default DefaultAccessLogBuffer.
	Buffer int
	// Sample2xx logs one in Sample2xx answers with a 2xx status; every
	// other answer is always logged. 0 or 1 logs them all.
	Sample2xx int
}

// AccessLog is an [Observer] that writes each request as one structured
// record, off the request's goroutine: ObserveRequest copies the record
// into a bounded buffer (about 300 bytes, no allocation) and a writer
// goroutine formats and writes it. It is safe for concurrent use.
//
// A record's attributes are client, method, host, path, proto, tls and
// sni (over TLS), status, bytesIn, bytesOut, duration (seconds), then,
// when not empty, route, upstream, destination, error (an
// upstream.Outcome name, or noDestination, affinityFailed, dropped,
// overloaded),
// requestId, retries and ttfb (seconds); its time is the end of the
// answer.
//
// Make it with [NewAccessLog], which starts its writer. The zero AccessLog
// has none: it drops and counts every record, and its Close does nothing.
type AccessLog struct {
	cfg   AccessLogConfig
	queue chan Record
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
	seen  atomic.Uint64 // 2xx answers seen, for sampling

	written, dropped, sampledOut Counter
}

// AccessLogStats are an AccessLog's counters.
type AccessLogStats struct {
	Written    uint64 // records handed to the logger
	Dropped    uint64 // records dropped because the buffer was full
	SampledOut uint64 // 2xx records left out by sampling
}

// NewAccessLog starts an access log writing to cfg.Logger (nil:
// slog.Default()). Close stops it.
func NewAccessLog(cfg AccessLogConfig) *AccessLog {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = DefaultAccessLogBuffer
	}
	a := &AccessLog{cfg: cfg, queue: make(chan Record, cfg.Buffer), stop: make(chan struct{}), done: make(chan struct{})}
	go a.run()
	return a
}

// ObserveRequest queues rec for writing, or drops and counts it when the
// buffer is full.
func (a *AccessLog) ObserveRequest(rec *Record) {
	if n := a.cfg.Sample2xx; n > 1 && rec.Status >= 200 && rec.Status < 300 {
		if (a.seen.Add(1)-1)%uint64(n) != 0 {
			a.sampledOut.Inc()
			return
		}
	}
	select {
	case a.queue <- *rec:
	default:
		a.dropped.Inc()
	}
}

// Stats returns the counters.
func (a *AccessLog) Stats() AccessLogStats {
	return AccessLogStats{Written: a.written.Load(), Dropped: a.dropped.Load(), SampledOut: a.sampledOut.Load()}
}

// Close writes the records already queued and stops the writer. Records
// observed after Close are queued and never written.
func (a *AccessLog) Close() error {
	if a.done == nil {
		return nil // a zero AccessLog: no writer
	}
	a.once.Do(func() { close(a.stop) })
	<-a.done
	return nil
}

func (a *AccessLog) run() {
	defer close(a.done)
	for {
		select {
		case rec := <-a.queue:
			a.write(&rec)
		case <-a.stop:
			for {
				select {
				case rec := <-a.queue:
					a.write(&rec)
				default:
					return
				}
			}
		}
	}
}

func (a *AccessLog) write(rec *Record) {
	h := a.cfg.Logger.Handler()
	ctx := context.Background()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	r := slog.NewRecord(rec.Start.Add(rec.Duration), slog.LevelInfo, "request", 0)
	r.AddAttrs(
		slog.String("client", addrString(rec)),
		slog.String("method", rec.Method),
		slog.String("host", rec.Host),
		slog.String("path", rec.Path),
		slog.String("proto", rec.Proto),
	)
	if rec.TLSVersion != 0 {
		r.AddAttrs(slog.String("tls", tls.VersionName(rec.TLSVersion)), slog.String("sni", rec.SNI))
	}
	r.AddAttrs(
		slog.Int("status", rec.Status),
		slog.Int64("bytesIn", rec.BytesIn),
		slog.Int64("bytesOut", rec.BytesOut),
		slog.Float64("duration", rec.Duration.Seconds()),
	)
	for _, kv := range [...]struct{ k, v string }{
		{"route", rec.RouteID}, {"upstream", rec.Upstream}, {"destination", rec.Destination},
		{"error", rec.Error}, {"requestId", rec.RequestID}, {"split", rec.Split}, {"mirror", rec.Mirror},
	} {
		if kv.v != "" {
			r.AddAttrs(slog.String(kv.k, kv.v))
		}
	}
	if rec.Retries != 0 {
		r.AddAttrs(slog.Int("retries", rec.Retries))
	}
	if rec.TTFB != 0 {
		r.AddAttrs(slog.Float64("ttfb", rec.TTFB.Seconds()))
	}
	if err := h.Handle(ctx, r); err == nil {
		a.written.Inc()
	}
}

func addrString(rec *Record) string {
	if rec.Client.IsValid() {
		return rec.Client.String()
	}
	if rec.Peer.IsValid() {
		return rec.Peer.Addr().String()
	}
	return ""
}
