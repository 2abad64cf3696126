package admin

import (
	"net/http"
	"time"

	"github.com/paduraksa/paduraksa/snapshot"
)

// CheckResult is the answer of POST /config/check: what a push of the
// draft would be told, without publishing it.
type CheckResult struct {
	// OK reports whether a push would apply the draft (or find it
	// unchanged).
	OK bool `json:"ok"`
	// Errors lists every problem a push would be refused with, in
	// document order, each with its code and path, as PUT /config's 422
	// answer lists them; Warnings what a push would be warned of. Both
	// are [] when empty.
	Errors   []Problem `json:"errors"`
	Warnings []Problem `json:"warnings"`
	// TookSeconds is the time the compile took.
	TookSeconds float64 `json:"tookSeconds"`
	// Message says what happened, for people.
	Message string `json:"message"`
}

// checkConfig compiles the body as PUT /config would and answers its
// problems, publishing nothing.
func (h *Handler) checkConfig(w http.ResponseWriter, r *http.Request) {
	release, ok := h.admit(w, "pushes and checks", "checked")
	if !ok {
		return
	}
	defer release()
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.cfg.ApplyTimeout))
	if !h.documentType(w, r) {
		return
	}
	data, ok := h.readDocument(w, r, "checked")
	if !ok {
		return
	}
	start := time.Now()
	snap, err := h.cfg.Compiler.DraftData(data)
	res := CheckResult{OK: err == nil, Errors: problems(snapshot.Problems(err)), Warnings: []Problem{}, TookSeconds: time.Since(start).Seconds(),
		Message: "a push would apply it; nothing was published"}
	if snap != nil {
		res.Warnings = problems(snap.Warnings())
	}
	if !res.OK {
		res.Message = "a push would be refused; nothing was published"
	}
	writeJSON(w, http.StatusOK, res)
}
