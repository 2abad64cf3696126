// Package admin is the HTTP admin API of a gateway built on the snapshot
// publisher: read the serving config and push a new one, list the latest
// outcomes, see each cluster's health, and mount the metrics and the
// simulator beside them.
//
// # Use
//
// Build a [Handler] from a [Config] naming the gateway's
// [snapshot.Publisher] and serve it on a listener of its own, apart from
// the traffic: on loopback, or behind a bearer token ([Config.Token]).
//
//	h, err := admin.New(admin.Config{Publisher: pub, Token: token, Metrics: metricsHandler})
//	...
//	go http.Serve(adminListener, h)
//
// # Metrics
//
// [NewMetrics] is a prometheus.Collector over the gateway's own lock-free
// counters (package telemetry, the gate's route and policy metrics, the
// destinations' counters, the publisher's, the edge's connection counts):
// a scrape reads them, a request copies nothing. Register it in a
// registry of one's own, or serve [Metrics.Handler] (the Prometheus text
// format, OpenMetrics when asked, with the Go runtime's and the process's
// metrics) as Config.Metrics; it renders at most [MaxScrapes] scrapes at
// once and answers one beyond 503 with Retry-After. The series walk the
// serving snapshot, so a host, route, upstream or destination a publish
// removed has none; every label value comes from the config.
//
// # Endpoints
//
//	GET  /config     the serving document as published (YAML or JSON;
//	                 canonical JSON for one published as a Go value).
//	                 ETag and Paduraksa-Revision carry its revision,
//	                 Paduraksa-Status and Paduraksa-Warnings its outcome,
//	                 Last-Modified when it was applied; If-None-Match
//	                 with the ETag answers 304.
//	PUT  /config     publish the body (JSON or YAML, at most
//	                 [Config.MaxDocumentBytes]) and answer its outcome as a
//	                 [PushResult]: 200 applied or unchanged, 422 refused
//	                 (with every problem's code and path; the previous
//	                 config keeps serving), 409 superseded by a later push,
//	                 412 stale. With If-Match: "<revision>" (GET's ETag)
//	                 the document is applied only while that revision is
//	                 serving, checked by the publisher's single writer: a
//	                 compare-and-swap, so two pushes based on one revision
//	                 never both apply. An unchanged push takes no
//	                 revision of its own: its answer's revision is the
//	                 serving one, so the revision of any 200 answer (and
//	                 its ETag) is the next push's If-Match. An applied
//	                 push is handed to [Config.Persist] to survive a
//	                 restart; without it, the answer says it lives in
//	                 memory only. 429 with
//	                 Retry-After when [Config.MaxPushes] pushes are in
//	                 progress, 408 when the document does not arrive
//	                 within [Config.ApplyTimeout], 504 when the outcome
//	                 does not either.
//	POST /config/check
//	                 compile the body (a draft, under PUT's limits) as a
//	                 push would and publish nothing: 200 with a
//	                 [CheckResult], {"ok": bool, "errors": [...],
//	                 "warnings": [...]}, the problems (code, path,
//	                 message) a push of it would be refused with, with
//	                 [Config.Compiler].
//	GET  /revisions  the latest outcomes ([Revisions]), newest first, as
//	                 many as the publisher keeps (unchanged pushes are
//	                 counted in the metrics, not kept).
//	GET  /health     every upstream of the serving config with each
//	                 destination's verdicts, availability and last change
//	                 (reason and time) ([Health]).
//	GET  /healthz    the gateway itself: 200 while a config is serving,
//	                 503 before ([Healthz]), with the reachability of
//	                 the engines it depends on ([Config.Engines]: etcd,
//	                 Redis), which ones are down and since when. An
//	                 engine down leaves it 200: the instance serves its
//	                 last document, and a balancer that pulled every
//	                 instance when etcd blips would take the whole fleet
//	                 down with it.
//	GET  /cluster    with [Config.Cluster], every instance of the fleet
//	                 as it wrote its state ([ClusterState]); 503
//	                 ([CodeClusterUnreachable]) when it cannot be read,
//	                 404 without a fleet.
//	POST /upstreams/{upstream}/destinations/{destination}/drain
//	POST /upstreams/{upstream}/destinations/{destination}/undrain
//	                 take the destination out of rotation (no new
//	                 request, in-flight ones finish, no probes) or put it
//	                 back, answering it as GET /health shows it
//	                 ([Destination]: draining, drainedBy, inFlight); 404
//	                 for one the serving config lacks. The drain lasts
//	                 across publishes that keep the destination; a
//	                 document's drain: true wins over undrain.
//	GET  /requests   the recent requests of [Config.Recent] (the
//	                 simulator's sample), newest first, as
//	                 [RecentRequests]: method, host and path as received,
//	                 status, route, upstream, destination, client. Query:
//	                 host=app.example (with or without the port),
//	                 status=404 or status=5xx, upstream=ID, limit=1 to
//	                 [MaxRequestsLimit]; any other parameter or value is
//	                 400 [CodeFilterInvalid] with the parameter as path.
//	                 404 without Recent.
//	GET  /metrics    [Config.Metrics]; 404 without it.
//	*    /simulate, /simulate/diff
//	                 [Config.Simulate]; 404 without it.
//	GET  /overview   what serves ([Overview]): the revision, when it was
//	                 applied, [Config.Instance], the config's hosts,
//	                 routes, upstreams and destinations, and the requests
//	                 and 5xx answered (two answers give the rates).
//	GET  /revisions/{n}
//	                 a kept revision's outcome with its document as
//	                 published and, when it applied, its canonical JSON
//	                 ([RevisionDocument]); 404 (admin.revision.unknown)
//	                 for one the publisher does not keep.
//	GET  /certificates
//	                 the serving config's certificates with their names
//	                 and validity, and the ACME manager's state of each
//	                 ([Certificates], [Config.ACME]).
//	GET  /console/   the operator's console (see below).
//
// # A fleet
//
// With [Config.Store] (fleet.Etcd in module
// github.com/paduraksa/paduraksa/fleet), the instances of a fleet share
// one document and PUT /config on any of them is one compare-and-swap for
// the whole fleet: the document is checked as a publish would check it
// (422 with every problem, nothing saved), saved in one transaction on
// If-Match's version (412 when another push or a put moved it on), and
// answered with the outcome this instance gives the saved version as it
// applies it from the store's watch, every other instance applying it
// too. In this mode the ETag of GET /config and of a 200 push is the
// store's version (the etcd key's mod revision, also in
// Paduraksa-Version and the answer's "version"), the same on every
// instance: an ETag read from one instance is a valid If-Match on
// another. Paduraksa-Revision and "revision" stay the instance's own
// publisher revision. A push whose version this instance refuses (a file
// it lacks) is answered 422 after it was saved: "persisted" says so.
//
//	curl -si http://127.0.0.1:9901/config | grep -i etag
//	ETag: "42"
//	curl -s -X PUT -H 'If-Match: "42"' --data-binary @config.yaml http://127.0.0.1:9902/config
//
// GET endpoints answer HEAD too; another method gets 405 with Allow.
// Errors are JSON: {"error": {"code": ..., "message": ...}}, with the
// stable codes listed with [CodeTokenMissing]. A body that is not a
// document gets 400 (empty, broken off, or an If-Match that is not one
// revision), 413 (too large) or 415 (a media type that is neither JSON,
// YAML nor plain bytes; curl's default form type is accepted, so
// curl --data-binary @config.yaml works as is).
//
// Every field name of the JSON answers is stable; fields are only ever
// added.
//
// # Cost
//
// What a request may cost the gateway at most, so that whoever holds the
// token (or reaches a listener without one) cannot take the traffic's
// CPU or memory with it:
//
//	GET  /config     the serving document as it was published, written
//	                 from the publisher's history: no copy, at most
//	                 MaxDocumentBytes.
//	PUT  /config     at most MaxPushes at once, each holding at most
//	                 MaxDocumentBytes, within ApplyTimeout from its start;
//	                 they apply one at a time (the publisher is the
//	                 single writer), so their decoding and compiling take
//	                 one core at most: about 35 ms for a YAML document of
//	                 2000 hosts, 3 s for 90 000 hosts (14 MiB).
//	GET  /revisions  one outcome per revision the publisher keeps, without
//	                 the documents.
//	GET  /health     one entry per destination of the serving config.
//	POST .../drain   one destination, two atomic stores and a recompute
//	                 of its cluster's available set.
//	GET  /healthz    nothing worth counting.
//	GET  /overview   one walk of the serving config's hosts and routes.
//	GET  /revisions/{n}
//	                 one kept document, as GET /config writes it, and
//	                 its canonical JSON.
//	GET  /certificates
//	                 one entry per certificate of the serving config, a
//	                 parse of its leaf when the table has none parsed.
//	/console/...     a file embedded in the binary; a login a SHA-256
//	                 and a session of a few hundred bytes, at most
//	                 MaxSessions kept (a login beyond ends the oldest).
//	POST /config/check
//	                 a push's compile without its publish, counted in
//	                 MaxPushes.
//	GET  /requests   a copy of the sample's ring (simulate.Sample's
//	                 Size, 256 by default).
//	GET  /metrics    one series per host, route and status code seen, per
//	                 policy and per destination of the serving config
//	                 (labels come from the config, never from clients).
//	*    /simulate   the simulator's own bounds (simulate.NewHandler):
//	                 its calls at once (429 beyond), each call's deadline
//	                 (503 past it), the probes of a diff, the bytes of a
//	                 request; a declared body costs what is read of it.
//
// A request without the token costs a SHA-256 of what it sent.
//
// # Authentication
//
// With [Config.Token] set, every request, /healthz included, must carry
// "Authorization: Bearer <token>" (or the console's session cookie, see
// Console; the console's files, login and session need neither); one
// without it gets 401 with
// WWW-Authenticate: Bearer, one with another token 401 with
// error="invalid_token". Tokens are compared through their SHA-256
// digests in constant time. [Handler.Protect] puts what a listener
// serves beside the API (the MCP tools of package
// github.com/paduraksa/paduraksa/mcp at /mcp) behind the same rule.
//
// Without a token, the listener is trusted for being unreachable from
// elsewhere, which a browser on the same machine breaks in two ways: a
// page whose name an attacker rebinds to 127.0.0.1 (DNS rebinding) calls
// the API as a page of its own origin, with Host: its name, and a page of
// any site can post a form to 127.0.0.1. So without a token, a request
// whose Host is not a loopback name (localhost, 127.0.0.0/8 or [::1],
// with any port) gets 403 admin.host.untrusted, and one whose Origin,
// when sent, is not an http or https loopback origin 403
// admin.origin.untrusted: the API, the console's files and what
// [Handler.Protect] guards alike. To serve the API under another name,
// set a token.
//
// # Console
//
// /console/ serves the operator's console from files embedded in the
// binary (plain HTML, CSS and JavaScript; nothing from elsewhere), so an
// embedder who mounts the Handler has it too, under the same prefix:
//
//	paduraksad admin API on http://127.0.0.1:9901
//	paduraksad console on http://127.0.0.1:9901/console/
//
// Its pages are the overview, the hosts with their routes (matches, splits,
// policies), the upstreams with each destination's health, in-flight
// requests, ejections and a drain button (confirmed in the page), the
// recent requests (filtered by host, status and upstream), the simulator as
// a form with its trace and the what-if of a draft against the recent
// requests, the config (the serving document, the kept revisions with their
// outcomes, a line diff between two, a push or a check listing every
// problem at its path in the document), and the certificates with their
// expiry and ACME state. The live pages (overview, upstreams, requests) poll
// the API every 2 seconds while the page is visible: plain GETs through the
// same authentication, nothing held open on the admin listener (its
// WriteTimeout and Shutdown stay as they are), and a page left in a
// background tab costs nothing.
//
// The console reads and writes only through the API above. With
// [Config.Token] set it shows a login page: POST /console/login with
// {"token": "..."} as application/json (at most [MaxTokenFileSize]
// bytes, or 413 admin.body.tooLarge) checks the token and sets the
// session cookie ([SessionCookie] and the listener's port; 32 random bytes, kept server-side by
// digest, HttpOnly, SameSite=Strict, Secure when the request came over
// TLS, ending after [Config.SessionTTL]; at most [MaxSessions] at once),
// and answers the session's CSRF token ([Session]); GET /console/session
// answers it again for a reloaded page; POST /console/logout ends it. The
// API accepts the session as it accepts the bearer token, and a request
// authenticated by the cookie whose method is not GET or HEAD must carry
// the CSRF token in [CSRFHeader], or gets 403 (admin.csrf.missing,
// admin.csrf.invalid). Sessions live in memory: a restart logs every
// browser out. Without a token there is nothing to log in to, and the
// console opens at once.
//
// Every answer carries a Content-Security-Policy of default-src 'self'
// with no inline script or style and frame-ancestors 'none',
// X-Content-Type-Options: nosniff, Referrer-Policy: no-referrer and
// X-Frame-Options: DENY. The console puts every value that comes from the
// config or from clients (host names, paths, headers) in the page as text,
// never as markup, so a host named <script> is shown as such.
//
// # Concurrency
//
// A Handler is safe for concurrent use. Pushes are processed one at a
// time (the publisher is the single writer, and Persist is called in
// revision order); a push reads the files its document names before its
// turn ([snapshot.Publisher.Prepare]), so a file that takes long (up to
// the compiler's FileTimeout) holds up that push alone, never another
// push or a read. Reads copy what they answer from the publisher.
package admin
