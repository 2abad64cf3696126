package admin

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/snapshot"
)

// etag returns the entity tag of a revision: its number, quoted.
func etag(rev uint64) string { return `"` + strconv.FormatUint(rev, 10) + `"` }

// getConfig answers the serving document as it was published (YAML or
// JSON; its canonical JSON when it was published as a Go value), with its
// revision in ETag and Paduraksa-Revision and its outcome in headers.
func (h *Handler) getConfig(w http.ResponseWriter, r *http.Request) {
	cur, ok := h.cfg.Publisher.Current()
	if !ok {
		writeError(w, http.StatusServiceUnavailable, CodeNoConfig, "no config is serving yet")
		return
	}
	doc, ctype := cur.Source, mediaType(cur.Source)
	if doc == nil {
		doc, ctype = cur.Snapshot.Canonical(), "application/json"
	}
	hd := w.Header()
	tag := etag(cur.Revision)
	if h.cfg.Store != nil {
		if v, _, ok := h.cfg.Store.ServingVersion(); ok {
			tag = strconv.Quote(v)
			hd.Set("Paduraksa-Version", v)
		}
	}
	hd.Set("ETag", tag)
	hd.Set("Last-Modified", cur.Time.UTC().Format(http.TimeFormat))
	hd.Set("Paduraksa-Revision", strconv.FormatUint(cur.Revision, 10))
	hd.Set("Paduraksa-Status", cur.Status.String())
	hd.Set("Paduraksa-Warnings", strconv.Itoa(len(cur.Warnings)))
	hd.Set("Cache-Control", "no-cache")
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.TrimSpace(inm) == tag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hd.Set("Content-Type", ctype)
	hd.Set("Content-Length", strconv.Itoa(len(doc)))
	w.WriteHeader(http.StatusOK)
	w.Write(doc)
}

// mediaType tells JSON from YAML as the snapshot package's decoder does:
// a document whose first character is '{' is JSON.
func mediaType(doc []byte) string {
	doc = bytes.TrimPrefix(doc, []byte("\xef\xbb\xbf"))
	if s := bytes.TrimLeft(doc, " \t\r\n"); len(s) > 0 && s[0] == '{' {
		return "application/json"
	}
	return "application/yaml"
}

// acceptedTypes are the media types a pushed document may be sent as. The
// body is decoded by its content (JSON or YAML) whatever the type says;
// the types of form posts and plain bytes are accepted because that is
// what curl --data-binary and similar clients send by default.
var acceptedTypes = map[string]bool{
	"application/json": true, "application/yaml": true, "application/x-yaml": true,
	"text/yaml": true, "text/x-yaml": true, "text/plain": true,
	"application/octet-stream": true, "application/x-www-form-urlencoded": true,
}

// putConfig publishes the body as the new document and answers its
// outcome, within MaxPushes and ApplyTimeout.
func (h *Handler) putConfig(w http.ResponseWriter, r *http.Request) {
	release, ok := h.admit(w, "pushes", "published")
	if !ok {
		return
	}
	defer release()
	deadline := time.Now().Add(h.cfg.ApplyTimeout)
	http.NewResponseController(w).SetReadDeadline(deadline) // a writer without deadlines has the server's
	if !h.documentType(w, r) {
		return
	}
	cond, ok := h.ifMatch(w, r)
	if !ok {
		return
	}
	data, ok := h.readDocument(w, r, "published")
	if !ok {
		return
	}

	// The push goes on when the client goes away: an applied document is
	// persisted all the same, and pushes persist in revision order. The
	// files the document names are read before waiting for the turn, so
	// a file that takes long holds up this push alone.
	ctx, cancel := context.WithDeadline(context.WithoutCancel(r.Context()), deadline)
	defer cancel()
	if h.cfg.Store != nil {
		h.pushToStore(ctx, w, r, data, cond)
		return
	}
	pub := h.cfg.Publisher
	prepared := pub.Prepare(data)
	select {
	case h.turn <- struct{}{}:
		defer func() { <-h.turn }()
	case <-ctx.Done():
		h.cfg.Logger.Warn("admin: config push waited its whole timeout for the pushes before it", "remote", r.RemoteAddr, "timeout", h.cfg.ApplyTimeout)
		writeError(w, http.StatusGatewayTimeout, CodeApplyTimeout,
			"the pushes before this one took the whole "+h.cfg.ApplyTimeout.String()+"; it was not published")
		return
	}
	var rev *snapshot.Revision
	if cond.set {
		rev = pub.PublishPreparedIf(prepared, cond.rev)
	} else {
		rev = pub.PublishPrepared(prepared)
	}
	o, err := rev.Wait(ctx)
	if err != nil {
		h.cfg.Logger.Error("admin: config push got no outcome in time", "revision", rev.ID(), "remote", r.RemoteAddr, "timeout", h.cfg.ApplyTimeout)
		writeError(w, http.StatusGatewayTimeout, CodeApplyTimeout, "revision "+strconv.FormatUint(rev.ID(), 10)+" got no outcome within "+h.cfg.ApplyTimeout.String())
		return
	}
	res := h.pushResult(o, data)
	status := http.StatusOK
	switch o.Status {
	case snapshot.Applied:
		res.Persisted, res.Message = true, "applied and saved"
		if h.cfg.Persist == nil {
			res.Persisted, res.Message = false, "applied in memory only: nothing saves pushed documents, so a restart loses it"
		} else if err := h.cfg.Persist(ctx, data); err != nil {
			status, res.Persisted = http.StatusInternalServerError, false
			res.Message = "applied, but not saved: a restart loses it"
			res.Errors = append(res.Errors, Problem{Code: CodePersistFailed, Message: err.Error()})
		}
	case snapshot.Unchanged:
		res.Message = "unchanged: the document equals the serving one"
	case snapshot.Refused:
		status, res.Message = http.StatusUnprocessableEntity, "refused; the previous config keeps serving"
	case snapshot.Superseded:
		status, res.Message = http.StatusConflict, "superseded by revision "+strconv.FormatUint(o.SupersededBy, 10)+" before it was processed"
	case snapshot.Stale:
		status, res.Message = http.StatusPreconditionFailed, "stale: revision "+strconv.FormatUint(res.Serving, 10)+" is serving"
		res.Errors = append(res.Errors, Problem{Code: CodeRevisionStale,
			Message: "If-Match names revision " + strconv.FormatUint(cond.rev, 10) + "; revision " + strconv.FormatUint(res.Serving, 10) + " is serving"})
	}
	if status == http.StatusOK {
		w.Header().Set("ETag", etag(res.Serving))
	}
	h.logPush(ctx, r, status, o, res, len(data))
	writeJSON(w, status, res)
}

// pushResult is the answer of a push whose outcome is o.
func (h *Handler) pushResult(o snapshot.Outcome, data []byte) PushResult {
	pub := h.cfg.Publisher
	e, ok := pub.Entry(o.Revision)
	if !ok || o.Status == snapshot.Unchanged {
		// The publisher keeps no history, or the push is the serving
		// revision, whose entry is the one that applied it.
		e = snapshot.Entry{Outcome: o, Time: time.Now(), Source: data}
	}
	res := PushResult{Outcome: outcomeOf(e)}
	if cur, ok := pub.Current(); ok {
		res.Serving = cur.Revision
	}
	return res
}

// logPush logs a push and its answer.
func (h *Handler) logPush(ctx context.Context, r *http.Request, status int, o snapshot.Outcome, res PushResult, size int) {
	level := slog.LevelInfo
	if status != http.StatusOK {
		level = slog.LevelWarn
	}
	attrs := []any{"revision", o.Revision, "status", o.Status.String(), "problems", len(o.Errors),
		"persisted", res.Persisted, "serving", res.Serving, "bytes", size, "remote", r.RemoteAddr}
	if res.Version != "" {
		attrs = append(attrs, "version", res.Version)
	}
	h.cfg.Logger.Log(ctx, level, "admin: config push", attrs...)
}

// admit takes one of the MaxPushes turns of a document's request (a push
// or a check), answering 429 itself when none is free; what names the
// requests in the answer ("pushes") and done what they would have done
// ("published").
func (h *Handler) admit(w http.ResponseWriter, what, done string) (release func(), ok bool) {
	select {
	case h.pushes <- struct{}{}:
		return func() { <-h.pushes }, true
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, CodeBusy,
			strconv.Itoa(h.cfg.MaxPushes)+" "+what+" are in progress, the most taken at once; this one was not "+done)
		return nil, false
	}
}

// documentType reports whether the request's Content-Type may carry a
// document, answering 415 itself when it may not.
func (h *Handler) documentType(w http.ResponseWriter, r *http.Request) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !acceptedTypes[mt] {
			writeError(w, http.StatusUnsupportedMediaType, CodeContentType,
				"a config document is JSON or YAML (application/json, application/yaml), not "+strconv.Quote(ct))
			return false
		}
	}
	return true
}

// readDocument reads the body, at most MaxDocumentBytes within the read
// deadline, answering 400, 408 or 413 itself when it holds no document;
// done says what was not done with it ("published").
func (h *Handler) readDocument(w http.ResponseWriter, r *http.Request, done string) ([]byte, bool) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxDocumentBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
			"the document is larger than "+strconv.FormatInt(h.cfg.MaxDocumentBytes, 10)+" bytes")
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close") // its read timed out
		writeError(w, http.StatusRequestTimeout, CodeBodyTimeout,
			"the document did not arrive within "+h.cfg.ApplyTimeout.String()+"; it was not "+done)
	case err != nil:
		writeError(w, http.StatusBadRequest, CodeBodyUnreadable, "reading the document: "+err.Error())
	case len(bytes.TrimSpace(data)) == 0:
		writeError(w, http.StatusBadRequest, CodeBodyEmpty, "the body holds no document (send {} for an empty config)")
	default:
		return data, true
	}
	return nil, false
}

// condition is a push's If-Match: the revision that must be serving
// (with a Store, the store's version of the document); star when it was
// "*".
type condition struct {
	rev       uint64
	set, star bool
}

// ifMatch reads If-Match: one entity tag of a revision ("7", quoted as
// GET /config's ETag, or bare), or "*" (any revision, as long as one is
// serving). It answers 400 or 412 itself and reports false when the
// request ends there.
func (h *Handler) ifMatch(w http.ResponseWriter, r *http.Request) (condition, bool) {
	vs := r.Header.Values("If-Match")
	if len(vs) == 0 {
		return condition{}, true
	}
	v := strings.TrimSpace(vs[0])
	if len(vs) == 1 && v == "*" {
		cur, ok := h.cfg.Publisher.Current()
		if !ok {
			writeJSON(w, http.StatusPreconditionFailed, PushResult{
				Outcome: Outcome{Status: snapshot.Stale.String(), Errors: []Problem{{Code: CodeRevisionStale, Message: "If-Match: * and no config is serving"}}, Warnings: []Problem{}},
				Message: "stale: no config is serving"})
			return condition{}, false
		}
		return condition{rev: cur.Revision, set: true, star: true}, true
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	rev, err := strconv.ParseUint(v, 10, 64)
	if len(vs) > 1 || err != nil {
		writeError(w, http.StatusBadRequest, CodeIfMatchInvalid, `If-Match takes one revision, as GET /config's ETag gives it ("7"), or *`)
		return condition{}, false
	}
	return condition{rev: rev, set: true}, true
}
