package gate

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/paduraksa/paduraksa/internal/problem"
	"golang.org/x/crypto/bcrypt"

	"github.com/paduraksa/paduraksa/internal/ipaddr"
	"golang.org/x/net/http/httpguts"
)

// CountryLookup resolves a client address to its country, an ISO 3166-1
// alpha-2 code in upper case ("DE"), or "" when unknown. It must be safe
// for concurrent use and should not allocate.
type CountryLookup interface {
	Country(netip.Addr) string
}

// BasicUser is one user of an access list's HTTP basic auth.
type BasicUser struct {
	Name string
	// Hash is the password's bcrypt hash ("$2a$...", "$2b$...", "$2y$...").
	Hash string
}

// AccessListConfig configures an [AccessList]. Checks run in this order:
// Deny, Allow, countries, users; the first that refuses decides.
type AccessListConfig struct {
	ID string
	// Allow, when not empty, admits only clients in these prefixes.
	Allow []netip.Prefix
	// Deny refuses clients in these prefixes; it wins over Allow.
	Deny []netip.Prefix
	// AllowCountries, when not empty, admits only clients of these
	// countries; DenyCountries refuses them. A client whose country is
	// unknown is refused by AllowCountries and passes DenyCountries. Both
	// need Countries.
	AllowCountries []string
	DenyCountries  []string
	Countries      CountryLookup
	// Users, when not empty, requires HTTP basic auth as one of them.
	Users []BasicUser
	// Realm is the basic-auth realm; default [DefaultRealm].
	Realm string
}

// AccessList refuses clients by address, by country, and by HTTP basic
// auth. Addresses are compared under the library's IPv4-mapped rule (see
// [Config.TrustedProxies]), in sorted prefix ranges (no allocation).
//
// Basic auth passwords are bcrypt hashes, and bcrypt is slow by design
// (tens of milliseconds at the default cost). So each user remembers the
// SHA-256 of the last credentials that verified; a request whose
// credentials hash to it (compared in constant time) skips bcrypt. A
// steady-state request costs a base64 decode and one SHA-256, and a wrong
// password always pays the full bcrypt. An unknown user name is checked
// against a dummy hash, so it costs the same as a wrong password.
//
// bcrypt checks are bounded per gateway ([Config.MaxPasswordChecks]): a
// request whose check would go over the bound is answered 503 with
// Retry-After at once, so a flood of wrong passwords costs the other hosts
// at most that many cores.
//
// Build it with [NewAccessList]; [New] refuses a zero AccessList.
type AccessList struct {
	id       string
	allow    ipaddr.PrefixSet
	deny     ipaddr.PrefixSet
	allowCC  []string
	denyCC   []string
	geo      CountryLookup
	users    map[string]*basicUser
	dummy    []byte
	page403  *Page
	page401  *Page
	hasAllow bool
}

type basicUser struct {
	hash     []byte
	verified atomic.Pointer[[sha256.Size]byte]
}

var _ Policy = (*AccessList)(nil)

// dummyHash is a bcrypt hash no password matches cheaply; unknown users
// are checked against it.
const dummyHash = "$2a$10$7EqJtq98hPqEX7fNZaFWoOhi5BWX4Z3ZSwnKQ2ZTmLPy4ENyB1Xm6"

// countryCodes returns country codes in upper case, refusing what is not
// two ASCII letters; at is the list's path.
func countryCodes(errs *problem.List, at string, ccs []string) []string {
	var out []string
	for i, c := range ccs {
		if len(c) != 2 || !isLetter(c[0]) || !isLetter(c[1]) {
			errs.Add(CodeAccessListCountryInvalid, problem.Index(at, i), strconv.Quote(c)+" is not an ISO 3166-1 alpha-2 code (two letters)")
			continue
		}
		out = append(out, strings.ToUpper(c))
	}
	return out
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// DefaultRealm is the basic-auth realm of an access list without one.
const DefaultRealm = "restricted"

// NewAccessList builds an access list. It returns every problem of cfg at
// once, each a [ValidationError] with a path relative to cfg.
func NewAccessList(cfg AccessListConfig) (*AccessList, error) {
	l := &AccessList{
		id:       cfg.ID,
		allow:    ipaddr.NewPrefixSet(cfg.Allow),
		deny:     ipaddr.NewPrefixSet(cfg.Deny),
		geo:      cfg.Countries,
		hasAllow: len(cfg.Allow) > 0,
		page403:  statusPage(http.StatusForbidden, nil),
		dummy:    []byte(dummyHash),
	}
	var errs problem.List
	checkPrefixes(&errs, "allow", cfg.Allow)
	checkPrefixes(&errs, "deny", cfg.Deny)
	l.allowCC = countryCodes(&errs, "allowCountries", cfg.AllowCountries)
	l.denyCC = countryCodes(&errs, "denyCountries", cfg.DenyCountries)
	if l.geo == nil {
		for _, f := range [...]struct {
			path string
			ccs  []string
		}{{"allowCountries", cfg.AllowCountries}, {"denyCountries", cfg.DenyCountries}} {
			if len(f.ccs) > 0 {
				errs.Add(CodeAccessListCountriesNoLookup, f.path, "country rules need a CountryLookup: without one no client has a country")
			}
		}
	}
	if len(cfg.Users) > 0 {
		l.users = make(map[string]*basicUser, len(cfg.Users))
		for i, u := range cfg.Users {
			at := problem.Index("users", i)
			ok := true
			if u.Name == "" || strings.IndexByte(u.Name, ':') >= 0 || !httpguts.ValidHeaderFieldValue(u.Name) {
				errs.Add(CodeAccessListUserNameInvalid, at+".name", "a user name is not empty and has no ':' or control characters")
				ok = false
			}
			if _, err := bcrypt.Cost([]byte(u.Hash)); err != nil {
				errs.Add(CodeAccessListUserHashInvalid, at+".hash", "not a bcrypt hash")
				ok = false
			}
			if ok {
				l.users[u.Name] = &basicUser{hash: []byte(u.Hash)}
			}
		}
	}
	checkHeaderValue(&errs, CodeAccessListRealmInvalid, "realm", cfg.Realm)
	if len(cfg.Users) > 0 {
		realm := cmpOr(cfg.Realm, DefaultRealm)
		l.page401 = statusPage(http.StatusUnauthorized, http.Header{
			"Www-Authenticate": {`Basic realm=` + strconv.Quote(realm) + `, charset="UTF-8"`},
		})
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *AccessList) checkBuilt(errs *problem.List, at string) {
	if l == nil || l.page403 == nil {
		notBuilt(errs, at, "AccessList", "NewAccessList")
	}
}

// ID returns the configured ID.
func (l *AccessList) ID() string { return l.id }

// Evaluate applies the list to rq.Client and the request's credentials.
func (l *AccessList) Evaluate(r *http.Request, rq *Request) Decision {
	c := rq.Client
	if !l.deny.Empty() && c.IsValid() && l.deny.ContainsNum(rq.clientNum()) {
		return Decision{Verdict: Respond, Page: l.page403, Reason: "address denied"}
	}
	if l.hasAllow && (!c.IsValid() || !l.allow.ContainsNum(rq.clientNum())) {
		return Decision{Verdict: Respond, Page: l.page403, Reason: "address not allowed"}
	}
	if l.geo != nil && (len(l.allowCC) > 0 || len(l.denyCC) > 0) {
		cc := l.geo.Country(c)
		if len(l.denyCC) > 0 && cc != "" && contains(l.denyCC, cc) {
			return Decision{Verdict: Respond, Page: l.page403, Reason: "country denied"}
		}
		if len(l.allowCC) > 0 && (cc == "" || !contains(l.allowCC, cc)) {
			return Decision{Verdict: Respond, Page: l.page403, Reason: "country not allowed"}
		}
	}
	if l.users != nil {
		switch l.checkBasic(r.Header["Authorization"], rq) {
		case authMissing:
			return Decision{Verdict: Challenge, Page: l.page401, Reason: "credentials required"}
		case authBad:
			return Decision{Verdict: Challenge, Page: l.page401, Reason: "wrong credentials"}
		case authBusy:
			return Decision{Verdict: Respond, Page: busyPage, Reason: "too many password checks at once"}
		}
		return Decision{Reason: "authenticated"}
	}
	return Decision{Reason: "allowed"}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

type authResult uint8

const (
	authOK authResult = iota
	authMissing
	authBad
	authBusy // the gateway's bound on concurrent bcrypt checks is reached
)

// busyPage answers a request whose password check would go over the
// bound.
var busyPage = statusPage(http.StatusServiceUnavailable, http.Header{"Retry-After": {"1"}})

// maxCredentials bounds the decoded user:password.
const maxCredentials = 512

// checkBasic verifies Basic credentials. It allocates nothing when the
// credentials match the user's cached verification.
func (l *AccessList) checkBasic(values []string, rq *Request) authResult {
	if len(values) != 1 {
		return authMissing
	}
	v := values[0]
	const prefix = "Basic "
	if len(v) < len(prefix) || !strings.EqualFold(v[:len(prefix)], prefix) {
		return authMissing
	}
	enc := strings.TrimLeft(v[len(prefix):], " ")
	var src [(maxCredentials + 2) / 3 * 4]byte // the longest encoding of maxCredentials bytes
	var buf [len(src) / 4 * 3]byte
	if len(enc) > len(src) {
		return authBad
	}
	copy(src[:], enc)
	n, err := base64.StdEncoding.Decode(buf[:], src[:len(enc)])
	if err != nil || n > maxCredentials {
		return authBad
	}
	cred := buf[:n]
	colon := -1
	for i, c := range cred {
		if c == ':' {
			colon = i
			break
		}
	}
	if colon < 0 {
		return authBad
	}
	u := l.users[string(cred[:colon])]
	hash := l.dummy
	var sum [sha256.Size]byte
	if u != nil {
		sum = sha256.Sum256(cred)
		if p := u.verified.Load(); p != nil && subtle.ConstantTimeCompare(p[:], sum[:]) == 1 {
			return authOK
		}
		hash = u.hash
	}
	if !rq.beginPasswordCheck() {
		return authBusy
	}
	err = bcrypt.CompareHashAndPassword(hash, cred[colon+1:])
	rq.endPasswordCheck()
	if u == nil || err != nil {
		return authBad
	}
	if !rq.DryRun {
		v := new([sha256.Size]byte)
		*v = sum
		u.verified.Store(v)
	}
	return authOK
}
