package connlimit

import (
	"errors"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/paduraksa/paduraksa/internal/ipaddr"
)

// Refusal reasons. Admit returns them as they are (no wrapping), so callers
// may compare with == or errors.Is.
var (
	// ErrDenied means the address is on the deny list.
	ErrDenied = errors.New("connlimit: address denied")
	// ErrOverCap means the address already has its cap of connections.
	ErrOverCap = errors.New("connlimit: too many connections from address")
)

// Transport says which listener a connection came through. It only selects
// the counters a refusal is recorded in.
type Transport uint8

const (
	TCP Transport = iota
	QUIC
	numTransports
)

func (t Transport) String() string {
	switch t {
	case TCP:
		return "tcp"
	case QUIC:
		return "quic"
	}
	return "unknown"
}

// Ticket is the place an admitted connection holds. Give it back with
// Limiter.Release exactly once, when the connection ends. The zero Ticket
// holds no place; releasing it does nothing.
type Ticket struct {
	slot uint32 // entry index + 1; 0: not counted
	tag  uint64
}

// Counted reports whether the ticket holds a place in the table.
func (t Ticket) Counted() bool { return t.slot != 0 }

// Limiter is the connection stage that runs before TLS: a deny list, then
// trusted peers and a cap per address key. Create it with New. All methods
// are safe for concurrent use. Admit, Check and Release take no lock and
// allocate nothing (apart from a log record, at most one per LogInterval,
// when Config.Logger is set, and what Config.OnRefusal does). A nil
// *Limiter, and a zero one, admit everything without counting.
type Limiter struct {
	perAddress uint64 // 0: cap off
	deny       ipaddr.PrefixSet
	trusted    ipaddr.PrefixSet
	tab        *table // nil: nothing is counted (the cap off, or a dry run)
	dryRun     bool
	onRefusal  func(Refusal)

	denied    [numTransports]atomic.Uint64
	overCap   [numTransports]atomic.Uint64
	tableFull atomic.Uint64
	misses    atomic.Uint64
	log       refusalLog
}

// New validates cfg and builds a Limiter from it. It returns the joined
// *ValidationError values of cfg.Validate when cfg is invalid.
func New(cfg Config) (*Limiter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := cfg.resolve()
	l := &Limiter{
		perAddress: r.perAddress,
		deny:       ipaddr.NewPrefixSet(cfg.Deny),
		trusted:    ipaddr.NewPrefixSet(cfg.TrustedProxies),
		dryRun:     cfg.DryRun,
		onRefusal:  cfg.OnRefusal,
		log:        refusalLog{logger: cfg.Logger, now: time.Now},
	}
	if r.tableSize > 0 {
		l.tab = newTable(r.tableSize)
	}
	return l, nil
}

// PerAddress returns the cap: 0 when the cap is off. A dry-run Limiter
// (Config.DryRun) reports its cap and never reaches it.
func (l *Limiter) PerAddress() int {
	if l == nil {
		return 0
	}
	return int(l.perAddress)
}

// Admit decides about a new connection from addr, in this order:
//
//  1. an address on the deny list is refused with ErrDenied, trusted
//     proxies included;
//  2. with the cap off, from a trusted proxy, or in a dry run
//     (Config.DryRun), the connection is admitted without being counted;
//  3. otherwise it is counted in the table, or refused with ErrOverCap when
//     its address key already holds the cap. When the key's window of the
//     table is full the connection is admitted uncounted (fail open) and
//     Stats.TableFull grows.
//
// An invalid addr stands for a client whose address is unknown (a Unix
// socket peer, a PROXY header with UNIX addresses): it is on no list, so
// never denied and never trusted, and every such connection is counted
// under one shared key, the unknown client, with the same cap. The
// returned Ticket must be given to Release when the connection ends; it is
// the zero Ticket on refusal.
func (l *Limiter) Admit(addr netip.Addr, tr Transport) (Ticket, error) {
	if l == nil {
		return Ticket{}, nil
	}
	k := ipaddr.Unknown
	if addr.IsValid() {
		a := ipaddr.NumOf(addr)
		if l.deny.ContainsNum(a) {
			return Ticket{}, l.refuse(reasonDeny, addr, tr)
		}
		if l.trusted.ContainsNum(a) {
			return Ticket{}, nil
		}
		k = a.Key()
	}
	if l.tab == nil {
		return Ticket{}, nil
	}
	slot, tag, res := l.tab.acquire(k, l.perAddress)
	switch res {
	case acquired:
		return Ticket{slot: slot + 1, tag: tag}, nil
	case overCap:
		return Ticket{}, l.refuse(reasonCap, addr, tr)
	default:
		l.tableFull.Add(1)
		l.log.note(reasonTableFull, addr, tr)
		return Ticket{}, nil
	}
}

// Check applies the same decision as Admit but takes no place: it refuses
// a denied address, and an address whose key already holds the cap (which
// in a dry run none does). The
// QUIC handshake hook uses it, where a place taken could leak (a spoofed
// source address never completes its handshake) but a refusal costs the
// real owner of the address nothing it has not already used up.
func (l *Limiter) Check(addr netip.Addr, tr Transport) error {
	if l == nil {
		return nil
	}
	k := ipaddr.Unknown
	if addr.IsValid() {
		a := ipaddr.NumOf(addr)
		if l.deny.ContainsNum(a) {
			return l.refuse(reasonDeny, addr, tr)
		}
		if l.trusted.ContainsNum(a) {
			return nil
		}
		k = a.Key()
	}
	if l.tab == nil {
		return nil
	}
	if n := l.tab.count(k); n >= l.perAddress || n >= countMask {
		return l.refuse(reasonCap, addr, tr)
	}
	return nil
}

// refuse counts and logs a refusal for reason r (unless in a dry run),
// tells OnRefusal, and returns its error.
func (l *Limiter) refuse(r reason, addr netip.Addr, tr Transport) error {
	err, counter := ErrDenied, &l.denied
	if r == reasonCap {
		err, counter = ErrOverCap, &l.overCap
	}
	if !l.dryRun {
		counter[tr%numTransports].Add(1)
		l.log.note(r, addr, tr)
	}
	if l.onRefusal != nil {
		l.onRefusal(Refusal{Addr: addr, Transport: tr, Err: err})
	}
	return err
}

// Release gives back the place t holds. Releasing the zero Ticket does
// nothing. Each counted Ticket must be released once; a second release of
// the same Ticket may take a place another connection of the same address
// holds (it never makes a count negative, and never touches another
// address: such releases are counted in Stats.ReleaseMisses).
func (l *Limiter) Release(t Ticket) {
	if t.slot == 0 || l == nil || l.tab == nil {
		return
	}
	if !l.tab.release(t.slot-1, t.tag) {
		l.misses.Add(1)
	}
}

// Stats is a snapshot of a Limiter's counters. The counters are read one
// by one, not atomically together.
type Stats struct {
	DeniedTCP   uint64 // refused by the deny list, per transport
	DeniedQUIC  uint64
	OverCapTCP  uint64 // refused by the per-address cap, per transport
	OverCapQUIC uint64
	// TableFull counts connections admitted uncounted because their
	// address found no room in its window of the table.
	TableFull uint64
	// Counted is the number of connections holding a place now.
	Counted uint64
	// ReleaseMisses counts releases that found no place to give back: a
	// Ticket released twice. It stays 0 in a correct program.
	ReleaseMisses uint64
}

// Stats returns the current counters. Counted is summed over the table,
// which reads every entry (about 30 µs for 65 536 entries): call Stats when
// metrics are scraped, not per connection. The connection path pays no
// shared counter for it.
func (l *Limiter) Stats() Stats {
	if l == nil {
		return Stats{}
	}
	s := Stats{
		DeniedTCP:     l.denied[TCP].Load(),
		DeniedQUIC:    l.denied[QUIC].Load(),
		OverCapTCP:    l.overCap[TCP].Load(),
		OverCapQUIC:   l.overCap[QUIC].Load(),
		TableFull:     l.tableFull.Load(),
		ReleaseMisses: l.misses.Load(),
	}
	if l.tab != nil {
		s.Counted = l.tab.total()
	}
	return s
}
