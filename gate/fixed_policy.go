package gate

import "net/http"

// Fixed is a policy that always answers with its page: a maintenance
// page, or a placeholder in front of a route. Put it in Shadow or Off mode
// to keep it configured but inactive.
type Fixed struct {
	id   string
	page *Page
}

var _ Policy = (*Fixed)(nil)

// NewFixed builds a fixed-answer policy; a status of 0 means 503.
func NewFixed(id string, a Answer) *Fixed {
	if a.Status == 0 {
		a.Status = http.StatusServiceUnavailable
	}
	return &Fixed{id: id, page: NewPage(a.Status, a.ContentType, a.Body, nil)}
}

// ID returns the configured ID.
func (f *Fixed) ID() string { return f.id }

// Evaluate answers with the page.
func (f *Fixed) Evaluate(*http.Request, *Request) Decision {
	return Decision{Verdict: Respond, Page: f.page, Reason: "fixed answer"}
}
