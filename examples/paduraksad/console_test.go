package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/admin"
)

// The console in a real browser: Debian's chromium, headless, driven
// through the DevTools protocol (chromedp), against the daemon on its
// embedded default config with an admin token.

// browser is one headless chromium tab, with what its pages threw.
type browser struct {
	t      *testing.T
	ctx    context.Context
	mu     sync.Mutex
	thrown []string // uncaught exceptions and CSP refusals
	shots  string   // the directory screenshots go to
}

// chromiumPath is Debian's chromium; the test fails without it (CI
// installs it), it is never skipped.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed (apt-get install chromium): the console's browser tests need it")
	return ""
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() }) // ends chromium, waiting for it
	b := &browser{t: t, ctx: ctx, shots: os.Getenv("PADURAKSA_ARTIFACTS")}
	if b.shots == "" {
		dir, err := os.MkdirTemp("", "paduraksa-console-*")
		require.NoError(t, err)
		b.shots = dir
	}
	require.NoError(t, os.MkdirAll(b.shots, 0o755))
	t.Logf("console screenshots in %s", b.shots)
	// The first run starts chromium, on the tab's own context: a deadline
	// there would end the browser.
	require.NoError(t, chromedp.Do(ctx), "chromium did not start")
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
				b.mu.Lock()
				b.thrown = append(b.thrown, m.String())
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// do runs actions under a deadline.
func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	require.NoError(b.t, chromedp.Do(ctx, actions...))
}

// eval evaluates a JavaScript expression, awaiting a promise, into out.
func eval[T any](b *browser, js string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	require.NoError(b.t, err, js)
	return v
}

// text returns the text content of the first element sel matches.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return eval[string](b, `document.querySelector(`+jsString(sel)+`).textContent`)
}

// texts returns the text content of every element sel matches.
func (b *browser) texts(sel string) []string {
	b.t.Helper()
	return eval[[]string](b, `Array.from(document.querySelectorAll(`+jsString(sel)+`), e => e.textContent)`)
}

// waitFor polls a JavaScript condition until it is true.
func (b *browser) waitFor(cond string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		body, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('main').innerText`))
		b.t.Fatalf("waiting for %s: %v\npage:\n%s", cond, err, body)
	}
}

// click clicks the first element sel matches.
func (b *browser) click(sel string) {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// set sets the value of the input sel matches.
func (b *browser) set(sel, value string) {
	b.t.Helper()
	b.do(chromedp.SetValue(chromedp.CSS(sel), value))
}

// page opens a page from the navigation and waits until ready holds.
func (b *browser) page(name, ready string) {
	b.t.Helper()
	b.click(`#nav a[data-page="` + name + `"]`)
	b.waitFor(`!document.querySelector('#page-` + name + `').hidden && (` + ready + `)`)
}

// shot saves a screenshot of the window.
func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(b.t, err)
	require.NoError(b.t, os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644))
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// The payload of the escaping checks: markup that would call the hook if
// it were ever taken as HTML, as a text node or as an attribute.
const (
	hookScript = `<script>window.__pwned('script')</script>`
	hookAttr   = `"onmouseover="window.__pwned('attr')"`
	hookImg    = `<img/src/onerror=window.__pwned('img')>` // no space: a request line has none
)

// TestConsoleInABrowser logs in to the console of a daemon serving its
// embedded default, renders every page, compares the simulator form's
// trace with paduraksad simulate's, pushes a bad document (every problem
// shown at its path, the old config serving), drains a destination from
// the upstreams page (new requests go to the other), checks that markup
// in host names and paths is shown as text and never runs, and that a
// state change without the CSRF token is refused.
func TestConsoleInABrowser(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	const token = "console-s3cret"
	require.NoError(t, os.WriteFile(tokenFile, []byte(token+"\n"), 0o600))
	d := startDaemon(t, "-admin-token-file", tokenFile, "-instance", "edge-test-1")
	consoleURL := "http://" + d.admin + "/console/"
	assert.Contains(t, d.out.String(), "paduraksad console on "+consoleURL)
	bearer := []string{"Authorization", "Bearer " + token}

	b := newBrowser(t)
	t.Logf("console at %s", consoleURL)

	// Log in: a wrong token is refused in the page, the right one opens
	// the overview.
	b.do(chromedp.Navigate(consoleURL), chromedp.WaitVisible(chromedp.CSS(`#login-form`)))
	b.shot("login")
	b.do(chromedp.SendKeys(chromedp.CSS(`#login-token`), "wrong"))
	b.click(`#login-submit`)
	b.waitFor(`document.querySelector('#login-error').textContent.includes('admin.token.invalid')`)
	b.set(`#login-token`, token)
	b.click(`#login-submit`)
	b.waitFor(`!document.querySelector('#page-overview').hidden && document.querySelector('#overview dd') !== null`)
	assert.Empty(t, eval[string](b, `document.cookie`), "the session cookie is HttpOnly")

	// Every page renders with the embedded default.
	for i := 0; i < 5; i++ {
		d.get(t, "localhost", "/hello") // traffic for the rates and the sample
	}
	b.waitFor(`document.querySelector('[data-fact="Requests per second"]').textContent !== '…'`)
	assert.Equal(t, "1", b.text(`[data-fact="Serving revision"]`))
	assert.Equal(t, "edge-test-1", b.text(`[data-fact="Instance"]`))
	assert.Equal(t, "3", b.text(`[data-fact="Hosts"]`))
	assert.Contains(t, b.text(`#overview-upstreams`), "demo")
	b.shot("overview")

	b.page("hosts", `document.querySelectorAll('#hosts article').length === 3`)
	assert.Equal(t, []string{"localhost, 127.0.0.1, ::1", "old.localhost", "status.localhost"}, b.texts(`#hosts article h3`))
	assert.Contains(t, b.text(`#hosts article table`), "demo")
	b.shot("hosts")

	b.page("upstreams", `document.querySelector('#upstreams tr[data-destination="demo-1"]') !== null`)
	assert.Contains(t, b.text(`#upstreams tr[data-destination="demo-1"]`), "Drain")
	b.shot("upstreams")

	b.page("requests", `document.querySelectorAll('#requests tr.request').length > 0 || document.querySelector('#requests-note').textContent.includes('0 recent')`)
	b.shot("requests")

	b.page("config", `document.querySelector('#config-document').textContent.includes('status.localhost') && document.querySelector('#revisions tr[data-revision="1"]') !== null`)
	b.shot("config")

	b.page("certificates", `document.querySelector('#certificates tr[data-certificate="localhost"]') !== null`)
	cert := b.text(`#certificates tr[data-certificate="localhost"]`)
	assert.Contains(t, cert, "embedder")
	assert.Contains(t, cert, "*.localhost")
	b.shot("certificates")

	// The simulator form gives the trace paduraksad simulate gives.
	b.page("simulate", `document.querySelector('#whatif-draft').value.includes('status.localhost')`)
	var cli, stderr bytes.Buffer
	require.NoError(t, runSimulate([]string{"GET", "http://status.localhost/"}, &cli, &stderr), stderr.String())
	b.set(`#sim-url`, "http://status.localhost/")
	b.click(`#sim-submit`)
	b.waitFor(`document.querySelectorAll('#sim-trace li').length > 0`)
	page := b.text(`#sim-request`) + "\n" + b.text(`#sim-outcome`) + "\n"
	for _, line := range b.texts(`#sim-details li`) {
		page += "  " + line + "\n"
	}
	page += "trace:\n"
	for i, line := range b.texts(`#sim-trace .step-line`) {
		page += "  " + strconv.Itoa(i+1) + ". " + line + "\n"
	}
	assert.Equal(t, cli.String(), page)
	b.shot("simulate")

	// Markup in a host name and in a path is shown as text and never runs:
	// a hook the payloads would call records nothing, even hovered.
	eval[bool](b, `window.__pwnedCalls = []; window.__pwned = (w) => window.__pwnedCalls.push(w); true`)
	evilPath := "/" + hookScript + hookAttr + hookImg
	for range 64 { // the sample keeps one request in 8, at random
		require.Equal(t, 200, roundTrip(t, d.addr, get("localhost", evilPath)).status)
	}
	evilURL := "http://" + hookAttr + hookScript + ".test" + evilPath
	b.set(`#sim-url`, evilURL)
	b.click(`#sim-submit`)
	b.waitFor(`document.querySelectorAll('#sim-trace li').length > 0`)
	assert.Equal(t, "GET "+evilURL, b.text(`#sim-request`), "the host's markup, shown as text")
	b.set(`#sim-url`, "http://localhost"+evilPath)
	b.click(`#sim-submit`)
	b.waitFor(`document.querySelector('#sim-outcome').textContent.includes('forwarded')`)
	assert.Contains(t, b.text(`#sim-trace`), hookScript, "the path's markup, shown as text")
	// The what-if of an empty config lists the sampled requests' URLs.
	b.set(`#whatif-draft`, "{}")
	b.click(`#whatif-submit`)
	b.waitFor(`document.querySelectorAll('#whatif-changes li').length > 0`)
	assert.Contains(t, b.text(`#whatif-changes`), "window.__pwned", "the sampled requests' URLs, as text")
	b.shot("whatif")
	b.page("requests", `document.querySelector('#requests').textContent.includes('<script>')`)
	assert.Contains(t, b.texts(`#requests td[data-col="path"]`), evilPath, "the path as received")
	b.set(`#requests-host`, "localhost")
	b.set(`#requests-status`, "404")
	b.click(`#requests-filter button`)
	b.waitFor(`document.querySelector('#requests-note').textContent.startsWith('0 recent requests matching')`)
	b.set(`#requests-status`, "200")
	b.click(`#requests-filter button`)
	b.waitFor(`document.querySelectorAll('#requests tr.request').length > 0`)
	hooked := eval[[]string](b, `document.querySelectorAll('main *').forEach(e => e.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}))); window.__pwnedCalls`)
	injected := eval[int](b, `document.querySelectorAll('main script, main img, main [onmouseover], main [onerror]').length`)
	assert.Empty(t, hooked, "a payload ran")
	assert.Zero(t, injected, "a payload became an element or an attribute")

	// A bad push shows each problem at its path; the old config keeps
	// serving.
	bad := "hosts:\n  - names: [app.test]\n    routes: [{upstream: missing}]\n  - names: [b.test]\n    routes: [{path: nope, upstream: demo}]\nupstreams:\n  - id: demo\n    destinations: [{id: x, address: 'ftp://127.0.0.1:1'}]\n"
	b.page("config", `document.querySelector('#push-document').value !== ''`)
	b.set(`#push-document`, bad)
	b.click(`#push-check`)
	b.waitFor(`document.querySelectorAll('#push-problems li').length > 0`)
	checked := b.problems()
	b.click(`#push-submit`)
	b.waitFor(`document.querySelector('#push-result').textContent.includes('refused')`)
	shown := b.problems()
	eval[bool](b, `document.querySelector('#push-problems').scrollIntoView(); true`)
	b.shot("push-refused")
	status, _, body := d.adminDo(t, "GET", "/revisions", "", bearer...)
	require.Equal(t, 200, status, body)
	var revs admin.Revisions
	require.NoError(t, json.Unmarshal([]byte(body), &revs))
	require.Equal(t, "refused", revs.Revisions[0].Status)
	var want []string
	for _, p := range revs.Revisions[0].Errors {
		want = append(want, p.Path+" "+p.Code)
	}
	require.GreaterOrEqual(t, len(want), 2, body)
	assert.Equal(t, want, shown, "every problem of the push, at its path")
	assert.Equal(t, want, checked, "the check lists what the push is refused with")
	// In the document, each problem is under the line its path names.
	lineOf := map[string]string{
		"hosts[0]":     "    routes: [{upstream: missing}]",
		"hosts[1]":     "    routes: [{path: nope, upstream: demo}]",
		"upstreams[0]": "    destinations: [{id: x, address: 'ftp://127.0.0.1:1'}]",
	}
	under := eval[map[string]string](b, `Object.fromEntries(Array.from(document.querySelectorAll('#push-annotated .problem'), p => {
		let l = p.previousElementSibling;
		while (l && !l.classList.contains('line')) l = l.previousElementSibling;
		return [p.dataset.path, l ? l.textContent.replace(/\n$/, '') : ''];
	}))`)
	require.Len(t, under, len(want), "every problem is shown in the document")
	for path, line := range under {
		prefix, _, _ := strings.Cut(path, ".")
		assert.Equal(t, lineOf[prefix], line, path)
	}
	assert.Equal(t, uint64(1), revs.Serving)
	// A diff between the serving revision and the refused one.
	b.waitFor(`document.querySelector('#diff-from option[value="2"]') !== null`)
	b.set(`#diff-from`, "1")
	b.set(`#diff-to`, "2")
	b.click(`#diff-submit`)
	b.waitFor(`document.querySelectorAll('#diff .add').length > 0`)
	assert.Contains(t, b.texts(`#diff .add`), "+     routes: [{upstream: missing}]\n")
	assert.Contains(t, b.texts(`#diff .del`), "-   - names: [status.localhost]\n")
	assert.Contains(t, b.texts(`#diff .same`), "  hosts:\n")
	b.shot("diff")
	status, hello := d.get(t, "localhost", "/hello")
	assert.Equal(t, 200, status)
	assert.Contains(t, hello, "hello from the demo upstream", "the old config serves")

	// A drain from the console stops new requests to that destination.
	events := make(chan string)
	close(events)
	one, two := startDrainBackend(t, "A", events), startDrainBackend(t, "B", nil)
	status, res := d.push(t, drainDoc(one, two, false, ""), bearer...)
	require.Equal(t, 200, status, res.Message)
	_, got := d.get(t, "app.test", "/")
	require.Equal(t, "A", got, "FirstAlphabetical: a takes every request")
	b.page("upstreams", `document.querySelector('#upstreams [data-upstream="app"] tr[data-destination="a"] button[data-action="drain"]') !== null`)
	b.click(`[data-upstream="app"] tr[data-destination="a"] button[data-action="drain"]`)
	b.waitFor(`document.querySelector('[data-upstream="app"] tr[data-destination="a"] button[data-action="confirm-drain"]') !== null`)
	assert.False(t, d.destinationHealth(t, "app", "a", bearer...).Draining, "nothing drains before the confirmation")
	b.shot("drain-confirm")
	b.click(`[data-upstream="app"] tr[data-destination="a"] button[data-action="confirm-drain"]`)
	b.waitFor(`document.querySelector('[data-upstream="app"] tr[data-destination="a"] button[data-action="undrain"]') !== null`)
	dst := d.destinationHealth(t, "app", "a", bearer...)
	assert.True(t, dst.Draining)
	assert.Equal(t, "admin", dst.DrainedBy)
	before := one.requests.Load()
	for range 10 {
		_, got := d.get(t, "app.test", "/")
		assert.Equal(t, "B", got)
	}
	assert.Equal(t, before, one.requests.Load(), "no new request reached the drained destination")
	b.shot("drained")

	// A state change without the CSRF token is refused, with the session
	// cookie the browser sends by itself.
	refused := eval[string](b, `fetch('../upstreams/app/destinations/b/drain', {method: 'POST', credentials: 'same-origin'}).then(async r => r.status + ' ' + (await r.json()).error.code)`)
	assert.Equal(t, "403 "+admin.CodeCSRFMissing, refused)
	refused = eval[string](b, `fetch('../upstreams/app/destinations/b/drain', {method: 'POST', headers: {'X-CSRF-Token': 'forged'}}).then(async r => r.status + ' ' + (await r.json()).error.code)`)
	assert.Equal(t, "403 "+admin.CodeCSRFInvalid, refused)
	assert.False(t, d.destinationHealth(t, "app", "b", bearer...).Draining, "the refused drains changed nothing")

	// Undrain puts it back: a takes the new requests again.
	b.click(`[data-upstream="app"] tr[data-destination="a"] button[data-action="undrain"]`)
	b.click(`[data-upstream="app"] tr[data-destination="a"] button[data-action="confirm-undrain"]`)
	b.waitFor(`document.querySelector('[data-upstream="app"] tr[data-destination="a"] button[data-action="drain"]') !== null`)
	assert.False(t, d.destinationHealth(t, "app", "a", bearer...).Draining)
	_, got = d.get(t, "app.test", "/")
	assert.Equal(t, "A", got)

	// Logging out ends the session: the API refuses the cookie.
	b.click(`#logout`)
	b.waitFor(`!document.querySelector('#login').hidden`)
	refused = eval[string](b, `fetch('../health').then(r => r.status + '')`)
	assert.Equal(t, "401", refused)

	b.mu.Lock()
	assert.Empty(t, b.thrown, "the pages threw or were refused by the CSP")
	b.mu.Unlock()
}

// problems returns the push page's problems as "path code".
func (b *browser) problems() []string {
	b.t.Helper()
	return eval[[]string](b, `Array.from(document.querySelectorAll('#push-problems li'), li => li.dataset.path + ' ' + li.querySelector('code.code').textContent)`)
}
