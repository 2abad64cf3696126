package balance

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// gateway is the forwarder's affinity and balancing steps in miniature.
func gateway(t *testing.T, c *upstream.Cluster, a *Affinity, p Policy) *httptest.Server {
	t.Helper()
	client := newClient(t, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := c.Members()
		d, st := a.Find(r, m)
		if st == AffinityFailed {
			http.Error(w, "affinity failed", http.StatusServiceUnavailable)
			return
		}
		if d == nil {
			if d = p.Pick(Input{Request: r}, m.Available); d == nil {
				http.Error(w, "no destination", http.StatusServiceUnavailable)
				return
			}
		}
		if st.NeedsSet() {
			a.Set(w, r, d)
		}
		d.Begin()
		defer d.End()
		resp, err := client.Get("http://" + d.Host() + "/")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("X-Instance", resp.Header.Get("X-Instance"))
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestAffinityFollowUpsAndRedistribute(t *testing.T) {
	for _, mode := range []AffinityMode{AffinityHashCookie, AffinityArrCookie} {
		t.Run(string(mode), func(t *testing.T) {
			c := cluster(t, backends(t, 3)...)
			a, err := NewAffinity(AffinityConfig{Mode: mode, KeyName: "aff"}, testKey)
			require.NoError(t, err)
			gw := gateway(t, c, a, new(RoundRobin))
			get := getter(t, gw.URL)

			resp, first := get()
			require.Len(t, resp.Cookies(), 1)
			ck := resp.Cookies()[0]
			assert.Equal(t, "aff", ck.Name)
			assert.Equal(t, a.Key(c.Destination(first)), ck.Value, "the key of the destination that answered")
			assert.Regexp(t, "^[0-9a-f]+$", ck.Value, "the key is a hash: no destination ID or address in clear")
			if mode == AffinityArrCookie {
				assert.Len(t, ck.Value, 64)
			} else {
				assert.Len(t, ck.Value, 16)
			}
			for range 30 {
				resp, inst := get()
				assert.Equal(t, first, inst)
				assert.Empty(t, resp.Cookies(), "a matched key is not set again")
			}

			c.Destination(first).SetActiveHealth(upstream.Unhealthy)
			resp, moved := get()
			others := []string{"b1", "b2", "b3"}
			others = slices.DeleteFunc(others, func(id string) bool { return id == first })
			assert.Contains(t, others, moved, "redistributed to another destination")
			require.Len(t, resp.Cookies(), 1, "and the cookie renewed")
			assert.Equal(t, a.Key(c.Destination(moved)), resp.Cookies()[0].Value, "for the new destination")
			for range 10 {
				_, inst := get()
				assert.Equal(t, moved, inst, "the client sticks to its new destination")
			}
		})
	}
}

func TestAffinityReturn503(t *testing.T) {
	c := cluster(t, backends(t, 2)...)
	a, err := NewAffinity(AffinityConfig{FailurePolicy: AffinityReturn503}, testKey)
	require.NoError(t, err)
	gw := gateway(t, c, a, PowerOfTwoChoices{})
	get := getter(t, gw.URL)
	resp, first := get()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, []string{"b1", "b2"}, first)

	c.Destination(first).SetActiveHealth(upstream.Unhealthy)
	resp, inst := get()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Empty(t, inst, "no destination answered")
}

// newClient returns a client with its own transport, closed when the test
// ends, and a timeout.
func newClient(t *testing.T, jar http.CookieJar) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Jar: jar, Timeout: 30 * time.Second}
}

// getter returns a function that GETs url with a cookie jar of its own and
// returns the response, its body read, and the instance that answered.
func getter(t *testing.T, url string) func() (*http.Response, string) {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	client := newClient(t, jar)
	return func() (*http.Response, string) {
		t.Helper()
		resp, err := client.Get(url)
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		return resp, resp.Header.Get("X-Instance")
	}
}

func TestAffinityFind(t *testing.T) {
	c := nDests(t, 3)
	a, err := NewAffinity(AffinityConfig{Mode: AffinityHeader, KeyName: "x-affinity"}, testKey)
	require.NoError(t, err)
	d := c.Members().All[1]
	key := a.Key(d)
	req := func(v string) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		if v != "" {
			r.Header.Set("X-Affinity", v)
		}
		return r
	}
	got, st := a.Find(req(key), c.Members())
	assert.Same(t, d, got)
	assert.Equal(t, AffinityMatched, st)
	got, st = a.Find(req(strings.ToUpper(key)), c.Members())
	assert.Same(t, d, got, "hex digits in either case")
	assert.Equal(t, AffinityMatched, st)

	for _, bad := range []string{"zz", key[:15], key + "0", strings.Repeat("0", 16)} {
		got, st = a.Find(req(bad), c.Members())
		assert.Nil(t, got)
		assert.Equal(t, AffinityRedistributed, st, bad)
	}
	_, st = a.Find(req(""), c.Members())
	assert.Equal(t, AffinityNone, st)

	// Panic mode keeps the client on its destination.
	for _, x := range c.Members().All {
		x.SetActiveHealth(upstream.Unhealthy)
	}
	got, st = a.Find(req(key), c.Members())
	assert.Same(t, d, got)
	assert.Equal(t, AffinityMatched, st)

	w := httptest.NewRecorder()
	a.Set(w, req(""), d)
	assert.Equal(t, key, w.Header().Get("X-Affinity"))

	// Another key, or another cluster with the same destination ID, gives
	// another value.
	b, _ := NewAffinity(AffinityConfig{}, []byte("another key, sixteen bytes long"))
	assert.NotEqual(t, key, b.Key(d))
	assert.NotEqual(t, key, a.Key(c.Members().All[0]))

	_, err = NewAffinity(AffinityConfig{}, []byte("short"))
	assert.EqualError(t, err, "balance: affinity key must be at least 16 bytes")
	assert.Len(t, NewAffinityKey(), 32)
}

func TestAffinityCookieAttributes(t *testing.T) {
	c := nDests(t, 1)
	d := c.Members().All[0]
	for _, tc := range []struct {
		cfg  CookieConfig
		tls  bool
		want string
	}{
		{CookieConfig{}, false, "; Path=/; HttpOnly; SameSite=Lax"},
		{CookieConfig{}, true, "; Path=/; HttpOnly; SameSite=Lax; Secure"},
		{CookieConfig{Secure: CookieSecureNever}, true, "; Path=/; HttpOnly; SameSite=Lax"},
		{CookieConfig{Path: "/app", Domain: "example.com", AllowScriptAccess: true, Secure: CookieSecureAlways,
			SameSite: CookieSameSiteNone, MaxAge: 3600e9}, false, "; Path=/app; Domain=example.com; Max-Age=3600; SameSite=None; Secure"},
		{CookieConfig{SameSite: CookieSameSiteUnspecified}, false, "; Path=/; HttpOnly"},
		{CookieConfig{SameSite: CookieSameSiteStrict}, false, "; Path=/; HttpOnly; SameSite=Strict"},
	} {
		a, err := NewAffinity(AffinityConfig{Cookie: tc.cfg}, testKey)
		require.NoError(t, err)
		r := httptest.NewRequest("GET", "/", nil)
		if tc.tls {
			r.TLS = &tls.ConnectionState{}
		}
		w := httptest.NewRecorder()
		a.Set(w, r, d)
		assert.Equal(t, DefaultAffinityKeyName+"="+a.Key(d)+tc.want, w.Header().Get("Set-Cookie"))
	}
}

func TestAffinityFindAllocatesNothing(t *testing.T) {
	c := nDests(t, 16)
	a, err := NewAffinity(AffinityConfig{}, testKey)
	require.NoError(t, err)
	m := c.Members()
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Cookie", "x=1; "+DefaultAffinityKeyName+"="+a.Key(m.All[7]))
	a.Find(r, m)
	allocs := testing.AllocsPerRun(200, func() {
		if d, _ := a.Find(r, m); d != m.All[7] {
			t.Fatal("wrong destination")
		}
	})
	assert.Zero(t, allocs)
}

func BenchmarkAffinityFind(b *testing.B) {
	c := nDests(b, 16)
	a, _ := NewAffinity(AffinityConfig{}, testKey)
	m := c.Members()
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Cookie", "x=1; "+DefaultAffinityKeyName+"="+a.Key(m.All[7]))
	b.ReportAllocs()
	for b.Loop() {
		a.Find(r, m)
	}
}
