package admin

import (
	"crypto/x509"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// The read-only endpoints the console shows beside the API's own:
// GET /overview, GET /revisions/{n} and GET /certificates.

// Overview is the answer of GET /overview: what serves, and how much.
type Overview struct {
	// Serving is the serving revision, Applied when it was applied,
	// Status its outcome ("applied") and Warnings its warnings' count.
	Serving  uint64    `json:"serving"`
	Applied  time.Time `json:"applied"`
	Status   string    `json:"status"`
	Warnings int       `json:"warnings"`
	// Instance is [Config.Instance].
	Instance string `json:"instance,omitempty"`
	// Hosts, Routes, Upstreams and Destinations count the serving
	// config's.
	Hosts        int `json:"hosts"`
	Routes       int `json:"routes"`
	Upstreams    int `json:"upstreams"`
	Destinations int `json:"destinations"`
	// Requests counts the requests the serving config's hosts answered
	// (unknown names included), Errors those answered 5xx or dropped;
	// with Time, two answers give the rates.
	Requests uint64    `json:"requests"`
	Errors   uint64    `json:"errors"`
	Time     time.Time `json:"time"`
}

// getOverview answers the serving revision and its counts.
func (h *Handler) getOverview(w http.ResponseWriter, r *http.Request) {
	cur, ok := h.cfg.Publisher.Current()
	if !ok {
		writeError(w, http.StatusServiceUnavailable, CodeNoConfig, "no config is serving yet")
		return
	}
	doc := cur.Snapshot.Document()
	o := Overview{Serving: cur.Revision, Applied: cur.Time, Status: cur.Status.String(), Warnings: len(cur.Warnings),
		Instance: h.cfg.Instance, Hosts: len(doc.Hosts), Upstreams: len(doc.Upstreams), Time: time.Now()}
	for i := range doc.Hosts {
		o.Routes += len(doc.Hosts[i].Routes)
	}
	for i := range doc.Upstreams {
		o.Destinations += len(doc.Upstreams[i].Destinations)
	}
	cur.Snapshot.Gate().EachRoute(func(_, _ string, m *gate.RouteMetrics) {
		m.Requests.Each(func(code string, n uint64) {
			o.Requests += n
			if code[0] == '5' {
				o.Errors += n
			}
		})
	})
	writeJSON(w, http.StatusOK, o)
}

// RevisionDocument is the answer of GET /revisions/{n}: a kept revision's
// outcome and its document.
type RevisionDocument struct {
	Outcome
	// Serving reports whether the revision is the serving one.
	Serving bool `json:"serving"`
	// Document is the document as it was published (YAML or JSON), or
	// its canonical JSON when it was published as a Go value; empty when
	// neither is kept. ContentType says which.
	Document    string `json:"document"`
	ContentType string `json:"contentType,omitempty"`
	// Canonical is the canonical JSON of an applied revision's document
	// (config.Canonical), the same value whatever it was written in;
	// absent for one that did not apply.
	Canonical json.RawMessage `json:"canonical,omitempty"`
}

// getRevision serves GET /revisions/{n}.
func (h *Handler) getRevision(w http.ResponseWriter, r *http.Request) {
	s := strings.TrimPrefix(r.URL.Path, "/revisions/")
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || strconv.FormatUint(n, 10) != s {
		writeError(w, http.StatusNotFound, CodeRevisionUnknown, "a revision is a number: /revisions/7, not "+strconv.Quote(s))
		return
	}
	e, ok := h.cfg.Publisher.Entry(n)
	if !ok {
		writeError(w, http.StatusNotFound, CodeRevisionUnknown, "revision "+s+" is not kept (see GET /revisions)")
		return
	}
	res := RevisionDocument{Outcome: outcomeOf(e), Document: string(e.Source)}
	if cur, ok := h.cfg.Publisher.Current(); ok {
		res.Serving = cur.Revision == e.Revision
	}
	if e.Snapshot != nil {
		res.Canonical = e.Snapshot.Canonical()
		if e.Source == nil {
			res.Document = string(res.Canonical)
		}
	}
	if res.Document != "" {
		res.ContentType = mediaType([]byte(res.Document))
	}
	writeJSON(w, http.StatusOK, res)
}

// Certificates is the answer of GET /certificates: every certificate of
// the serving config, in document order.
type Certificates struct {
	Certificates []Certificate `json:"certificates"`
}

// Certificate is one certificate of the serving config.
type Certificate struct {
	ID string `json:"id"`
	// Source is "files" (certFile and keyFile), "acme" (obtained by the
	// ACME manager) or "embedder" (the gateway's own, given to its
	// compiler).
	Source string `json:"source"`
	// Pending reports whether the config has no certificate for the ID
	// yet (an ACME order under way): handshakes get the default one.
	Pending bool `json:"pending"`
	// Names are the names the certificate covers (DNS names, then IP
	// addresses), Subject its subject, NotBefore and NotAfter its
	// validity; absent while pending.
	Names     []string  `json:"names,omitempty"`
	Subject   string    `json:"subject,omitempty"`
	NotBefore time.Time `json:"notBefore,omitzero"`
	NotAfter  time.Time `json:"notAfter,omitzero"`
	// ACME is the manager's state of an acme certificate, when
	// [Config.ACME] is set.
	ACME *ACMEState `json:"acme,omitempty"`
}

// ACMEState is what the ACME manager says of one certificate
// ([tlsselect.ACMEStatus]).
type ACMEState struct {
	Names       []string  `json:"names"`
	NotAfter    time.Time `json:"notAfter,omitzero"`
	RenewAt     time.Time `json:"renewAt,omitzero"`
	Ordering    bool      `json:"ordering"`
	NextOrder   time.Time `json:"nextOrder,omitzero"`
	Failures    int       `json:"failures"`
	LastError   string    `json:"lastError,omitempty"`
	LastErrorAt time.Time `json:"lastErrorAt,omitzero"`
}

// getCertificates answers the serving config's certificates with their
// validity, and the ACME manager's state of each.
func (h *Handler) getCertificates(w http.ResponseWriter, r *http.Request) {
	cur, ok := h.cfg.Publisher.Current()
	if !ok {
		writeError(w, http.StatusServiceUnavailable, CodeNoConfig, "no config is serving yet")
		return
	}
	acme := map[string]tlsselect.ACMEStatus{}
	if h.cfg.ACME != nil {
		for _, s := range h.cfg.ACME().Certificates {
			acme[s.ID] = s
		}
	}
	table := cur.Snapshot.TLS()
	res := Certificates{Certificates: []Certificate{}}
	for _, dc := range cur.Snapshot.Document().Certificates {
		c := Certificate{ID: dc.ID, Source: "embedder"}
		switch {
		case dc.ACME:
			c.Source = "acme"
		case dc.CertFile != "":
			c.Source = "files"
		}
		if leaf := leafOf(table, dc.ID); leaf != nil {
			c.Names, c.Subject, c.NotBefore, c.NotAfter = leaf.DNSNames, leaf.Subject.String(), leaf.NotBefore, leaf.NotAfter
			for _, ip := range leaf.IPAddresses {
				c.Names = append(c.Names, ip.String())
			}
		} else {
			c.Pending = true
		}
		if s, ok := acme[dc.ID]; ok {
			c.ACME = &ACMEState{Names: s.Names, NotAfter: s.NotAfter, RenewAt: s.RenewAt, Ordering: s.Ordering, NextOrder: s.NextOrder,
				Failures: s.Failures, LastError: s.LastError, LastErrorAt: s.LastErrorAt}
		}
		res.Certificates = append(res.Certificates, c)
	}
	writeJSON(w, http.StatusOK, res)
}

// leafOf returns the leaf of a certificate the table serves, or nil.
func leafOf(t *tlsselect.Table, id string) *x509.Certificate {
	c := t.Certificate(id)
	if c == nil || len(c.Certificate) == 0 {
		return nil
	}
	if c.Leaf != nil {
		return c.Leaf
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return nil
	}
	return leaf
}
