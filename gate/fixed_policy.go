package gate

import (
	"net/http"

	"github.com/paduraksa/paduraksa/internal/problem"
)

// Fixed is a policy that always answers with its page: a maintenance
// page, or a placeholder in front of a route. Put it in Shadow or Off mode
// to keep it configured but inactive.
//
// The zero Fixed answers nothing: build it with [NewFixed] ([New] refuses
// a zero one).
type Fixed struct {
	id     string
	answer Answer
	page   *Page
}

var _ Policy = (*Fixed)(nil)

// NewFixed builds a fixed-answer policy; a status of 0 means 503. The
// answer is checked when a gate is built with the policy: [New] refuses
// a status outside 200-599, a content type that is no header value and a
// body over [MaxAnswerBody], as for a fixed host.
func NewFixed(id string, a Answer) *Fixed {
	if a.Status == 0 {
		a.Status = http.StatusServiceUnavailable
	}
	return &Fixed{id: id, answer: a, page: NewPage(a.Status, a.ContentType, a.Body, nil)}
}

func (f *Fixed) checkBuilt(errs *problem.List, at string) {
	if f == nil || f.page == nil {
		notBuilt(errs, at, "Fixed", "NewFixed")
		return
	}
	checkAnswer(errs, at+".answer", f.answer)
}

// ID returns the configured ID.
func (f *Fixed) ID() string { return f.id }

// Evaluate answers with the page.
func (f *Fixed) Evaluate(*http.Request, *Request) Decision {
	return Decision{Verdict: Respond, Page: f.page, Reason: "fixed answer"}
}
