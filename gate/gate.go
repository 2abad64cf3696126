package gate

import (
	"log/slog"

	"github.com/paduraksa/paduraksa/internal/ipaddr"
	"github.com/paduraksa/paduraksa/telemetry"
)

// Gate decides what happens to each request. It is immutable and safe for
// concurrent use; publish a new Gate to change anything. Build it with
// [New]: the zero Gate has no host table or answers, and serving with it
// panics.
type Gate struct {
	hosts          hostTable
	def            *answer
	defServer      []string
	trusted        ipaddr.PrefixSet
	probes         ipaddr.PrefixSet
	trustProto     bool
	cloudflare     bool
	challenges     *ChallengeStore
	state          *State
	logger         *slog.Logger
	tracer         *Tracer
	compiled       []*Host // the compiled hosts: Config.Hosts, then Config.Reuse
	defaultAnswers *answerSet
	unknown        *RouteMetrics // the unknown host's
	answerHook     AnswerFunc
	observer       telemetry.Observer
	accessLog      telemetry.Observer

	maxPasswordChecks int
}

// Host returns the i-th compiled host: Config.Hosts[i], then the hosts of
// Config.Reuse. It is immutable and may be passed back to a later [New] in
// Config.Reuse.
func (g *Gate) Host(i int) *Host { return g.compiled[i] }

// Lookup returns the host a Host header value names, and how it matched.
// A value that names no host at all (empty; a name with an empty label or
// a byte other than letters, digits, "-", "_" and "."; a port that is not
// digits) is HostUnknown even when the gate has a catch-all host. It
// allocates nothing.
func (g *Gate) Lookup(host string) (*Host, HostMatch) {
	var buf [maxHostLen]byte
	h, m, _ := g.hosts.lookup(buf[:0], host)
	return h, m
}

// State returns the gate's long-lived state.
func (g *Gate) State() *State { return g.state }

// headerValue returns a shared header value slice whose length equals its
// capacity, so an Add by anyone appends to a copy.
func headerValue(v string) []string { return []string{v}[:1:1] }
