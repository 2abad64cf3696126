package admin

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/telemetry"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// routeLiterals returns every path the handler routes on, read from its
// source: the string of each case clause and of each strings.HasPrefix
// that begins with "/".
func routeLiterals(t *testing.T, files ...string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		add := func(e ast.Expr) {
			if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(s, "/") {
					out[s] = true
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CaseClause:
				for _, e := range n.List {
					add(e)
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "HasPrefix" && len(n.Args) == 2 {
					add(n.Args[1])
				}
			}
			return true
		})
	}
	return out
}

// Without the token, every route the handler serves answers 401, every
// method of it; only the console's static files (and the redirect to
// them) answer without it, and they hold nothing of the config, of the
// clients or of the token. The routes are read from the handler's
// source, so a new one is in this walk or fails it.
func TestEveryRouteNeedsTheToken(t *testing.T) {
	const tok = "route-walk-token"
	served := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("served")) })
	a := newAPI(t, Config{
		Token: tok, Instance: "instance-secret", Metrics: served, Simulate: served,
		Recent:  func() []telemetry.Record { return []telemetry.Record{{Host: "client-secret.test"}} },
		Cluster: func(context.Context) (any, error) { return []string{"instance-secret"}, nil },
		Engines: func() []Engine { return []Engine{{Name: "etcd", Reachable: true}} },
		ACME:    func() tlsselect.ACMEStats { return tlsselect.ACMEStats{} },
	})
	ans, _ := a.push(fixedDoc("host-secret.test", "body-secret"), "Authorization", "Bearer "+tok)
	require.Equal(t, 200, ans.status, ans.body)
	secrets := []string{tok, "instance-secret", "client-secret", "host-secret", "body-secret"}

	// Each route with a path that reaches it.
	protected := map[string]string{
		"/config":          "/config",
		"/config/check":    "/config/check",
		"/simulate":        "/simulate",
		"/simulate/diff":   "/simulate/diff",
		"/upstreams/":      "/upstreams/u/destinations/d/drain",
		"/revisions/":      "/revisions/1",
		"/revisions":       "/revisions",
		"/health":          "/health",
		"/healthz":         "/healthz",
		"/overview":        "/overview",
		"/certificates":    "/certificates",
		"/requests":        "/requests",
		"/cluster":         "/cluster",
		"/metrics":         "/metrics",
		"/console/login":   "/console/login",
		"/console/logout":  "/console/logout",
		"/console/session": "/console/session",
	}
	public := map[string]string{"/console": "/console", "/console/": "/console/"}
	for route := range routeLiterals(t, "handler.go", "console.go") {
		_, p := protected[route]
		_, q := public[route]
		assert.True(t, p || q, "route %s is not in the walk: add it", route)
	}

	methods := []string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"}
	for route, path := range protected {
		for _, m := range methods {
			body := ""
			if m == "POST" || m == "PUT" || m == "PATCH" {
				body = `{"token":""}`
			}
			ans := a.do(m, path, body, "Content-Type", "application/json")
			if route == "/console/login" || route == "/console/logout" || route == "/console/session" {
				// The console's own endpoints answer a method they do
				// not take 405 before any authentication: nothing is
				// served either way.
				if ans.status == http.StatusMethodNotAllowed {
					continue
				}
			}
			assert.Equal(t, 401, ans.status, "%s %s: %s", m, path, ans.body)
			for _, s := range secrets {
				assert.NotContains(t, ans.body, s, "%s %s", m, path)
			}
		}
	}
	for _, path := range []string{"/nope", "/console-not", "/configs", "/revisions/1/x", "/mcp"} {
		assert.Equal(t, 401, a.do("GET", path, "").status, path)
	}

	// The public files: every embedded one, the index and the redirect.
	paths := []string{"/console", "/console/"}
	require.NoError(t, fs.WalkDir(consoleFS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, "/console/"+p)
		}
		return err
	}))
	require.Greater(t, len(paths), 4, "the console's files are embedded")
	for _, path := range paths {
		ans := a.do("GET", path, "")
		assert.Contains(t, []int{200, 301}, ans.status, path)
		for _, s := range secrets {
			assert.NotContains(t, ans.body, s, path)
			for _, vs := range ans.header {
				assert.NotContains(t, strings.Join(vs, " "), s, path)
			}
		}
	}
}
