package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// templatePeer is a peer with every part of the config filled in, as the
// balancing scenario renders it at its largest.
func templatePeer(t *testing.T, kind string) (*peer, confData) {
	t.Helper()
	dir := t.TempDir()
	cert, err := makeCert(dir, []string{"127.0.0.25"})
	require.NoError(t, err)
	s := &suite{opt: options{net: "127.0.0"}, upstreamAddr: "127.0.0.10:9000", cert: cert}
	p := &peer{kind: kind, ip: "127.0.0.25", dir: dir, s: s}
	return p, p.baseConf().withPools(p).withHosts(3, "extra.test")
}

// TestDaemonTemplate: the daemon's rendered config is a document the
// library decodes, validates and compiles, so a change of the document
// format that the template misses fails here and not in a benchmark run.
func TestDaemonTemplate(t *testing.T) {
	p, c := templatePeer(t, kindDaemon)
	var b bytes.Buffer
	require.NoError(t, templates.ExecuteTemplate(&b, "paduraksad.yaml.tmpl", c))
	doc, err := config.Decode(b.Bytes())
	require.NoError(t, err, "%s", b.String())
	require.Empty(t, snapshot.Validate(doc))
	mon := health.New(health.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, mon.Start(ctx))
	defer mon.Close()
	require.Empty(t, (&snapshot.Compiler{Health: mon}).Check(doc))
	require.Len(t, doc.Hosts, 1+4+1+len(policies), "main, three fillers and the extra host, and a host per pool")

	// With -https the TLS fields render too, and compile with the
	// suite's certificate.
	c.TLS = true
	b.Reset()
	require.NoError(t, templates.ExecuteTemplate(&b, "paduraksad.yaml.tmpl", c))
	doc, err = config.Decode(b.Bytes())
	require.NoError(t, err, "%s", b.String())
	require.Empty(t, (&snapshot.Compiler{Health: mon}).Check(doc))
	js, err := yaml.YAMLToJSON(b.Bytes())
	require.NoError(t, err)
	require.Contains(t, string(js), `"defaultCertificate":"bench"`)
	require.Contains(t, string(js), `"certFile":"`+p.s.cert.Cert+`"`)

	// The h1-limit scenario's limit, local buckets, compiles and is on
	// the main host (cluster buckets render the same with another word,
	// compiled by the daemon with its -redis store).
	c.TLS, c.Limit = false, "local"
	b.Reset()
	require.NoError(t, templates.ExecuteTemplate(&b, "paduraksad.yaml.tmpl", c))
	doc, err = config.Decode(b.Bytes())
	require.NoError(t, err, "%s", b.String())
	require.Empty(t, (&snapshot.Compiler{Health: mon}).Check(doc))
	require.Equal(t, []string{"bench-limit"}, doc.Hosts[0].Policies)
	require.Len(t, doc.RateLimits, 1)
	require.Equal(t, "local", doc.RateLimits[0].Buckets)
}

// TestPeerTemplates checks the other peers' rendered configs with their
// own checkers, where they are installed.
func TestPeerTemplates(t *testing.T) {
	for _, tc := range []struct {
		kind string
		argv func(dir string) []string
	}{
		{kindNginx, func(dir string) []string {
			return []string{"nginx", "-t", "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", filepath.Join(dir, "nginx.conf")}
		}},
		{kindHAProxy, func(dir string) []string { return []string{"haproxy", "-c", "-f", filepath.Join(dir, "haproxy.cfg")} }},
		{kindCaddy, func(dir string) []string {
			return []string{"caddy", "validate", "--config", filepath.Join(dir, "caddy.json")}
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			if _, err := exec.LookPath(tc.kind); err != nil {
				t.Skip(tc.kind + " is not installed")
			}
			p, c := templatePeer(t, tc.kind)
			f, err := makeCert(p.dir, []string{p.ip})
			require.NoError(t, err)
			c.Cert = f
			require.NoError(t, os.MkdirAll(filepath.Join(p.dir, "tmp"), 0o755))
			require.NoError(t, p.render(c))
			argv := tc.argv(p.dir)
			out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
			require.NoError(t, err, "%s", out)
		})
	}
}
