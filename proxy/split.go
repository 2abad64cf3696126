package proxy

import (
	"math/bits"
	"net/http"
	"net/netip"
	"strconv"
	"sync/atomic"

	"golang.org/x/net/http/httpguts"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/enum"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// Limits of a [SplitConfig].
const (
	// MaxSplitSides is the most sides a split has.
	MaxSplitSides = 16
	// MaxSplitWeight is the largest weight of one side (the Gateway API's
	// bound).
	MaxSplitWeight = 1_000_000
)

// SplitReason says why a request went to the side it did.
type SplitReason uint8

const (
	// SplitWeight: the weights chose (the zero value).
	SplitWeight SplitReason = iota
	// SplitSticky: the sticky key's hash chose, from the weights.
	SplitSticky
	// SplitForced: a force rule's header or cookie value named the side.
	SplitForced
	// SplitFallback: the side the weights or the sticky key chose had no
	// available destination, and another side with one took the request.
	SplitFallback
	numSplitReasons = iota
)

var splitReasonNames = enum.Names[SplitReason]{"weight", "sticky", "forced", "fallback"}

// String returns the reason's name: "weight", "sticky", "forced" or
// "fallback", as the access log and the metrics write it.
func (s SplitReason) String() string { return splitReasonNames.Name(s) }

// SplitReasonNames returns the names of the reasons, in order.
func SplitReasonNames() []string { return splitReasonNames }

// SplitConfig describes a route's weighted sides: a [Split] sends each
// request to one of them.
type SplitConfig struct {
	// Sides are the split's targets, each a [Route] of its own with its
	// cluster's balancing, health, affinity and retries and the route's
	// own settings; 1 to MaxSplitSides.
	Sides []SplitSide
	// Sticky, when it names a key, places each key on a side by the
	// key's hash and the weights, so that a key stays on its side while
	// the weights hold and the side has an available destination. The
	// zero Sticky is no stickiness.
	Sticky Sticky
	// Force lists values of a header or a cookie that send a request to
	// one side whatever the weights or the key say, checked first, in
	// order; the first that matches wins, even when its side has no
	// available destination (its route answers 503).
	Force []Force
}

// SplitSide is one side of a split.
type SplitSide struct {
	// Route forwards the side's requests.
	Route *Route
	// Weight is the side's share of the requests that no force rule
	// sends, against the sum of the weights: 0 takes none of them (a side
	// only forced requests reach), at most MaxSplitWeight.
	Weight int
	// Stats, when not nil, counts the requests the side took by
	// [SplitReason]; keep one per route and side across publishes.
	Stats *SideStats
}

// Sticky names the key of a sticky split: one of a cookie's value, a
// header's first value, or the client address the gate resolved. A
// request without the key is placed by the weights. The split reads the
// key and never sets it: a cookie key is one the application sets (a
// session's, say).
type Sticky struct {
	Cookie string
	Header string
	Client bool
}

// Force sends a request to one side when a header or a cookie has a
// value: exactly one of Header and Cookie.
type Force struct {
	Header string
	Cookie string
	// Value is compared exactly. A header sent twice (two lines, or one
	// with a comma list) is compared on its values joined with ", ",
	// as the gate's header matches are: "always" does not match
	// "never" + "always".
	Value string
	// Side is the index of the side in SplitConfig.Sides.
	Side int
}

// SideStats counts the requests a split's side took, by reason, with
// lock-free counters. The zero value is ready; it is safe for concurrent
// use.
type SideStats struct {
	reasons [numSplitReasons]atomic.Uint64
}

// Count returns how many requests the side took for reason r.
func (s *SideStats) Count(r SplitReason) uint64 {
	if s == nil || int(r) >= len(s.reasons) {
		return 0
	}
	return s.reasons[r].Load()
}

func (s *SideStats) add(r SplitReason) {
	if s != nil {
		s.reasons[r].Add(1)
	}
}

// Split is a [gate.Target] that sends each request to one of its sides,
// each a [Route]: forced by a header or cookie value first, else by the
// sticky key's hash, else by the weights; a side whose cluster has no
// available destination, or only unhealthy ones (the availability
// policy's panic fallback), passes its share to the other sides (by their
// weights, the same key on the same side) and takes it back when it has
// one again. When no side has one, the chosen side's route answers. Build one with [NewSplit]; the zero Split has no sides, and
// [Split.CheckTarget] (which gate.New asks) refuses it. A Split is
// immutable, belongs to one snapshot and is safe for concurrent use.
//
// The weighted choice takes no lock and allocates nothing: an atomic
// counter n places the n-th request at the fraction n·φ (mod 1) of the
// weights, a low-discrepancy (Weyl) sequence, so every window of
// requests lands within a few requests of each side's share (over 100 000
// requests a 90/10 split sends 10 000 ± 2 to the smaller side), and the
// same computation places a sticky key by its hash. math/rand/v2 would
// need no shared counter but holds a share only to about ±0.1 point over
// 100 000 requests, and a test of it could not be exact.
type Split struct {
	sides  []splitSide
	total  uint64
	key    balance.KeyHash
	keyed  bool
	keyWhy string // "sticky key cookie canary-side"
	force  []splitForce
	values []gate.PathValueUse
	cfg    SplitConfig

	_    [64]byte // the counter on a cache line of its own
	next atomic.Uint64
	_    [56]byte
}

type splitSide struct {
	rt     *Route
	weight uint64
	end    uint64 // the sum of the weights up to and including this side
	stats  *SideStats
}

type splitForce struct {
	header string // canonical, or ""
	cookie string
	value  string
	side   int
}

var (
	_ gate.Target          = (*Split)(nil)
	_ gate.TargetChecker   = (*Split)(nil)
	_ gate.AnswerHeaders   = (*Split)(nil)
	_ gate.PathValueReader = (*Split)(nil)
)

// NewSplit checks and compiles a split. It returns every problem of cfg
// at once, each a [ValidationError] with a path relative to cfg
// ("sides[1].weight", "force[0].header").
func NewSplit(cfg SplitConfig) (*Split, error) {
	var errs problem.List
	s := &Split{cfg: cfg}
	switch {
	case len(cfg.Sides) == 0:
		errs.Add(CodeSplitSidesMissing, "sides", "a split needs at least one side")
	case len(cfg.Sides) > MaxSplitSides:
		errs.Add(CodeSplitSidesTooMany, "sides", strconv.Itoa(len(cfg.Sides))+" sides, over "+strconv.Itoa(MaxSplitSides))
	}
	for k, sd := range cfg.Sides {
		at := problem.Index("sides", k)
		if sd.Route == nil {
			errs.Add(CodeSplitSideRouteMissing, at+".route", "a side needs a route")
		} else {
			errs.Under(at+".route", CodeRouteClusterMissing, sd.Route.CheckTarget())
			for _, v := range sd.Route.PathValues() {
				s.values = appendValue(s.values, v)
			}
		}
		if sd.Weight < 0 || sd.Weight > MaxSplitWeight {
			errs.Add(CodeSplitWeightInvalid, at+".weight", strconv.Itoa(sd.Weight)+" is not 0 to "+strconv.Itoa(MaxSplitWeight))
			continue
		}
		s.total += uint64(sd.Weight)
		s.sides = append(s.sides, splitSide{rt: sd.Route, weight: uint64(sd.Weight), end: s.total, stats: sd.Stats})
	}
	if len(cfg.Sides) > 0 && s.total == 0 && len(errs) == 0 {
		errs.Add(CodeSplitWeightsZero, "sides", "the weights sum to 0: no request could be placed")
	}
	s.compileSticky(&errs, cfg.Sticky)
	for k, f := range cfg.Force {
		at := problem.Index("force", k)
		sf := splitForce{value: f.Value, side: f.Side}
		switch {
		case f.Header != "" && f.Cookie != "":
			errs.Add(CodeSplitForceKeyInvalid, at, "a force rule names a header or a cookie, not both")
		case f.Header != "":
			if !httpguts.ValidHeaderFieldName(f.Header) {
				errs.Add(CodeSplitForceNameInvalid, at+".header", quote(f.Header)+" is not a header name")
			}
			sf.header = http.CanonicalHeaderKey(f.Header)
		case f.Cookie != "":
			if !httpguts.ValidHeaderFieldName(f.Cookie) {
				errs.Add(CodeSplitForceNameInvalid, at+".cookie", quote(f.Cookie)+" is not a cookie name")
			}
			sf.cookie = f.Cookie
		default:
			errs.Add(CodeSplitForceKeyInvalid, at, "a force rule needs a header or a cookie")
		}
		if f.Value == "" {
			errs.Add(CodeSplitForceValueMissing, at+".value", "a force rule needs the value that forces")
		}
		if f.Side < 0 || f.Side >= len(cfg.Sides) {
			errs.Add(CodeSplitForceSideInvalid, at+".side", "side "+strconv.Itoa(f.Side)+" is not one of the split's "+strconv.Itoa(len(cfg.Sides)))
		}
		s.force = append(s.force, sf)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

// compileSticky checks the sticky key and makes its hash.
func (s *Split) compileSticky(errs *problem.List, st Sticky) {
	n := 0
	var hc balance.HashConfig
	field := ""
	if st.Cookie != "" {
		n, hc, field = n+1, balance.HashConfig{Source: balance.HashCookie, Name: st.Cookie}, "cookie"
		s.keyWhy = "sticky key cookie " + st.Cookie
	}
	if st.Header != "" {
		n, hc, field = n+1, balance.HashConfig{Source: balance.HashHeader, Name: st.Header}, "header"
		s.keyWhy = "sticky key header " + http.CanonicalHeaderKey(st.Header)
	}
	if st.Client {
		n, hc = n+1, balance.HashConfig{Source: balance.HashClientAddress}
		s.keyWhy = "sticky key client address"
	}
	switch {
	case n == 0:
		return
	case n > 1:
		errs.Add(CodeSplitStickyConflict, "sticky", "a sticky split has one key: a cookie, a header or the client address")
		return
	}
	k, err := balance.NewKeyHash(hc)
	if err != nil {
		errs.Add(CodeSplitStickyNameInvalid, "sticky."+field, quote(hc.Name)+" is not a "+field+" name")
		return
	}
	s.key, s.keyed = k, true
}

func appendValue(vs []gate.PathValueUse, v gate.PathValueUse) []gate.PathValueUse {
	for _, w := range vs {
		if w.Name == v.Name {
			return vs
		}
	}
	return append(vs, v)
}

// Forward sends the request to the side the split chooses for it (see
// [Split]), whose route forwards it, and counts the side's reason.
func (s *Split) Forward(w http.ResponseWriter, r *http.Request, rq *gate.Request) {
	i, why := s.pick(r, rq.Client, false)
	sd := &s.sides[i]
	sd.stats.add(why)
	rq.Record.Split = splitReasonNames[why]
	if tr := rq.Tracer; tr != nil {
		c := s.explain(i, why, r)
		tr.OnStep(gate.Step{Kind: gate.StepForward, Name: c.Upstream, Reason: "split: " + c.Why})
	}
	sd.rt.Forward(w, r, rq)
}

// SplitChoice is the side a split chooses for a request, and why.
type SplitChoice struct {
	// Side is the index of the side in SplitConfig.Sides, Route its
	// route and Upstream its cluster's upstream ID.
	Side     int
	Route    *Route
	Upstream string
	Reason   SplitReason
	// Why says it for a person: "weight 90 of 100", "sticky key cookie
	// canary-side", "forced by header X-Canary", "fallback from canary,
	// which has no available destination".
	Why string
}

// Choose returns the side the split would choose for r from client (the
// address the gate resolved) now, and changes nothing: for a weighted
// choice, the side the next request without a key would take. The
// simulator names the side of a hand-over with it.
func (s *Split) Choose(r *http.Request, client netip.Addr) SplitChoice {
	if len(s.sides) == 0 {
		return SplitChoice{Side: -1}
	}
	i, why := s.pick(r, client, true)
	return s.explain(i, why, r)
}

// explain says why side i took r.
func (s *Split) explain(i int, why SplitReason, r *http.Request) SplitChoice {
	sd := &s.sides[i]
	c := SplitChoice{Side: i, Route: sd.rt, Upstream: sd.rt.upstreamID(), Reason: why}
	switch why {
	case SplitWeight:
		c.Why = "weight " + strconv.FormatUint(sd.weight, 10) + " of " + strconv.FormatUint(s.total, 10)
		if s.keyed {
			c.Why += " (no " + s.keyWhy[len("sticky key "):] + ")"
		}
	case SplitSticky:
		c.Why = s.keyWhy
	case SplitForced:
		for _, f := range s.force {
			if f.matches(r) {
				if f.header != "" {
					c.Why = "forced by header " + f.header + ": " + f.value
				} else {
					c.Why = "forced by cookie " + f.cookie + "=" + f.value
				}
				break
			}
		}
	case SplitFallback:
		c.Why = "fallback: the chosen side has no available destination"
	}
	return c
}

// pick returns the side for a request and why; peek leaves the weighted
// counter as it is.
func (s *Split) pick(r *http.Request, client netip.Addr, peek bool) (int, SplitReason) {
	for k := range s.force {
		if f := &s.force[k]; f.matches(r) {
			return f.side, SplitForced
		}
	}
	var h uint64
	why := SplitWeight
	if s.keyed {
		if kh, ok := s.key.Hash(balance.Input{Request: r, Client: client}); ok {
			h, why = kh, SplitSticky
		}
	}
	if why == SplitWeight {
		n := s.next.Load() + 1
		if !peek {
			n = s.next.Add(1)
		}
		h = n * 0x9e3779b97f4a7c15 // n·φ mod 1, in 64-bit fixed point
	}
	i := s.at(h, s.total, -1)
	if s.sides[i].rt.hasAvailable() {
		return i, why
	}
	// The same point over the other sides' weights: a key falls back to
	// one side, and comes back when its own recovers.
	var rest uint64
	for j := range s.sides {
		if j != i && s.sides[j].rt.hasAvailable() {
			rest += s.sides[j].weight
		}
	}
	if rest == 0 {
		return i, why // nowhere better: the side's route answers 503
	}
	return s.at(h, rest, i), SplitFallback
}

// at returns the side at point h of total weights (h scaled onto
// [0, total)); skip >= 0 leaves that side and the sides without an
// available destination out of the sum.
func (s *Split) at(h, total uint64, skip int) int {
	p, _ := bits.Mul64(h, total)
	var sum uint64
	last := 0
	for j := range s.sides {
		sd := &s.sides[j]
		if sd.weight == 0 || skip >= 0 && (j == skip || !sd.rt.hasAvailable()) {
			continue
		}
		sum += sd.weight
		if p < sum {
			return j
		}
		last = j
	}
	return last
}

// matches reports whether r carries the rule's value.
func (f *splitForce) matches(r *http.Request) bool {
	if f.header != "" {
		return joinedEqual(r.Header[f.header], f.value)
	}
	v, ok := balance.CookieValue(r.Header["Cookie"], f.cookie)
	return ok && v == f.value
}

// joinedEqual reports whether the values joined with ", " equal want,
// without joining them.
func joinedEqual(vv []string, want string) bool {
	if len(vv) == 0 {
		return false
	}
	for k, v := range vv {
		if k > 0 {
			if len(want) < 2 || want[0] != ',' || want[1] != ' ' {
				return false
			}
			want = want[2:]
		}
		if len(want) < len(v) || want[:len(v)] != v {
			return false
		}
		want = want[len(v):]
	}
	return want == ""
}

// CheckTarget reports whether the split can forward: the zero Split has
// no sides.
func (s *Split) CheckTarget() error {
	var errs problem.List
	if len(s.sides) == 0 {
		errs.Add(CodeSplitSidesMissing, "sides", "a split needs at least one side (build it with NewSplit)")
	}
	return errs.Err()
}

// SetAnswerHeaders adds the first side's answer headers ([Route.SetAnswerHeaders])
// to an answer the gate gives itself for the route: the sides of one
// route share its site and rules.
func (s *Split) SetAnswerHeaders(h http.Header, r *http.Request) {
	if len(s.sides) > 0 {
		s.sides[0].rt.SetAnswerHeaders(h, r)
	}
}

// PathValues returns the template route values any side's rewrite reads
// ([gate.PathValueReader]).
func (s *Split) PathValues() []gate.PathValueUse { return s.values }

// Sides returns the split's sides as [NewSplit] was given them; nil for
// the zero Split. It must not be modified.
func (s *Split) Sides() []SplitSide { return s.cfg.Sides }

// Config returns the split's config as [NewSplit] was given it.
func (s *Split) Config() SplitConfig { return s.cfg }

// hasAvailable reports whether the route's cluster has an available
// destination now that is not only the panic fallback's
// ([upstream.Members.Panic]: every destination unhealthy).
func (rt *Route) hasAvailable() bool {
	m := rt.cluster.Upstream.Members()
	return m != nil && len(m.Available) > 0 && !m.Panic
}

// upstreamID returns the ID of the route's upstream, or "".
func (rt *Route) upstreamID() string {
	if rt.cluster == nil || rt.cluster.Upstream == nil {
		return ""
	}
	return rt.cluster.Upstream.ID()
}
