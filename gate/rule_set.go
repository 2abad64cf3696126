package gate

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/internal/problem"
	"golang.org/x/net/http/httpguts"
)

// RuleAction is what a matching rule does.
type RuleAction uint8

const (
	// RuleDeny answers 403 (the zero value).
	RuleDeny RuleAction = iota
	// RuleAllow lets the request through the rest of the rule set.
	RuleAllow
	// RuleRespond answers with the rule's own status and body.
	RuleRespond
)

// Rule matches requests by path, method and user agent; every condition
// that is set must hold. Matching is literal: no regular expressions.
type Rule struct {
	// PathPrefix matches the path view ([PathView.Match]) by plain string
	// prefix ("/wp-" matches "/wp-admin"), PathExact by equality, ASCII
	// letters in any case for both. Both are spelled as the view spells
	// paths ([CheckPrefix]): a value no request can match is refused.
	PathPrefix string
	PathExact  string
	// Methods matches any of these methods (exact, upper case).
	Methods []string
	// UserAgentContains matches a User-Agent containing this text, ASCII
	// case ignored.
	UserAgentContains string
	Action            RuleAction
	// Status and Body are the answer of a RuleRespond rule (Status
	// 200-599 required); ContentType defaults to text/plain.
	Status      int
	ContentType string
	Body        []byte
}

// RuleSetConfig configures a [RuleSet].
type RuleSetConfig struct {
	ID    string
	Rules []Rule
}

// RuleSet evaluates its rules in order; the first that matches decides.
// No match continues. Build it with [NewRuleSet]; [New] refuses a zero
// RuleSet.
type RuleSet struct {
	id    string
	rules []compiledRule
}

type compiledRule struct {
	prefix, exact string
	methods       []string
	ua            []byte // lower case
	verdict       Verdict
	page          *Page
	reason        string
}

var _ Policy = (*RuleSet)(nil)

// NewRuleSet compiles a rule set. It returns every problem of cfg at once,
// each a [ValidationError] with a path relative to cfg.
func NewRuleSet(cfg RuleSetConfig) (*RuleSet, error) {
	s := &RuleSet{id: cfg.ID, rules: make([]compiledRule, len(cfg.Rules))}
	deny := statusPage(http.StatusForbidden, nil)
	var errs problem.List
	for i, r := range cfg.Rules {
		c := &s.rules[i]
		at := problem.Index("rules", i)
		c.prefix, c.exact = lowerASCII(r.PathPrefix), lowerASCII(r.PathExact)
		c.methods = append([]string(nil), r.Methods...)
		c.ua = []byte(r.UserAgentContains)
		for j, b := range c.ua {
			c.ua[j] = lower(b) // ASCII only: strings.ToLower would change other bytes too
		}
		n := "rule " + strconv.Itoa(i) + ": "
		for _, f := range [...]struct{ name, p string }{{".pathPrefix", r.PathPrefix}, {".pathExact", r.PathExact}} {
			if err := CheckPrefix(f.p); err != nil {
				errs.Add(CodeRuleSetRulePathInvalid, at+f.name, strconv.Quote(f.p)+": "+strings.TrimPrefix(err.Error(), "gate: ")+"; no request path could match")
			}
		}
		for k, m := range r.Methods {
			if !httpguts.ValidHeaderFieldName(m) {
				errs.Add(CodeRuleSetRuleMethodInvalid, problem.Index(at+".methods", k), strconv.Quote(m)+" is not a method token")
			}
		}
		switch r.Action {
		case RuleDeny:
			c.verdict, c.page, c.reason = Respond, deny, n+"deny"
		case RuleAllow:
			c.verdict, c.reason = Continue, n+"allow"
		case RuleRespond:
			checkAnswer(&errs, at, Answer{Status: r.Status, ContentType: r.ContentType, Body: r.Body})
			c.verdict, c.page, c.reason = Respond, NewPage(r.Status, r.ContentType, r.Body, nil), n+"respond"
		default:
			errs.Add(CodeRuleSetRuleActionUnknown, at+".action", "unknown action "+r.Action.String()+" (want "+ruleActionNames.List()+")")
		}
		if r.Action != RuleRespond && (r.Status != 0 || r.ContentType != "" || r.Body != nil) {
			errs.Add(CodeRuleSetRuleAnswerUnused, at+".status", "an answer is only given by a respond rule")
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *RuleSet) checkBuilt(errs *problem.List, at string) {
	if s == nil || s.rules == nil {
		notBuilt(errs, at, "RuleSet", "NewRuleSet")
	}
}

// ID returns the configured ID.
func (s *RuleSet) ID() string { return s.id }

// Evaluate applies the first matching rule.
func (s *RuleSet) Evaluate(r *http.Request, rq *Request) Decision {
	if i := s.match(rq.Path, r.Method, r.Header); i >= 0 {
		c := &s.rules[i]
		return Decision{Verdict: c.verdict, Page: c.page, Reason: c.reason}
	}
	return Decision{Reason: "no rule matched"}
}

// match returns the index of the first rule that matches, or -1. It
// looks User-Agent up once, when a rule's other conditions have held and
// it names one: a rule set of paths and methods costs no header lookup.
func (s *RuleSet) match(path, method string, h http.Header) int {
	var ua []string
	uaRead := false
	for i := range s.rules {
		c := &s.rules[i]
		if c.prefix != "" && (len(path) < len(c.prefix) || !equalLower(path[:len(c.prefix)], c.prefix)) {
			continue
		}
		if c.exact != "" && !equalLower(path, c.exact) {
			continue
		}
		if len(c.methods) > 0 && !contains(c.methods, method) {
			continue
		}
		if len(c.ua) > 0 {
			if !uaRead {
				ua, uaRead = h["User-Agent"], true
			}
			if len(ua) == 0 || !containsFold(ua[0], c.ua) {
				continue
			}
		}
		return i
	}
	return -1
}

// containsFold reports whether s contains the lower-case needle, ASCII
// case ignored. It is a plain scan: no backtracking, O(len(s)*len(needle))
// at worst, bounded by the header limits.
func containsFold(s string, needle []byte) bool {
	n := len(needle)
	if n == 0 {
		return true
	}
	first := needle[0]
	for i := 0; i+n <= len(s); i++ {
		if lower(s[i]) != first {
			continue
		}
		j := 1
		for j < n && lower(s[i+j]) == needle[j] {
			j++
		}
		if j == n {
			return true
		}
	}
	return false
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
