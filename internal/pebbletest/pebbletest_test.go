package pebbletest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStart: the directory answers over HTTPS verified by TLSRoots and by
// the roots file, and nothing was ordered yet.
func TestStart(t *testing.T) {
	s := Start(t, Options{HTTPPort: FreePort(t)})
	pemData, err := os.ReadFile(s.TLSRootsFile)
	require.NoError(t, err)
	fromFile := x509.NewCertPool()
	require.True(t, fromFile.AppendCertsFromPEM(pemData))
	require.NotNil(t, s.Issuer)

	for name, roots := range map[string]*x509.CertPool{"TLSRoots": s.TLSRoots, "TLSRootsFile": fromFile} {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
		client := &http.Client{Transport: tr, Timeout: ioTimeout}
		res, err := client.Get(s.Directory)
		require.NoError(t, err, name)
		var dir map[string]any
		err = json.NewDecoder(res.Body).Decode(&dir)
		res.Body.Close()
		tr.CloseIdleConnections()
		require.NoError(t, err, name)
		assert.Contains(t, dir["newOrder"], "/order-plz", name)
	}
	assert.Equal(t, 0, s.NewOrders())
	assert.Regexp(t, `(?m)^pebble: `, s.Logs())
	assert.Regexp(t, `(?m)^pebble-challtestsrv: `, s.Logs())
}

// TestPrefixWriter: each line gets the prefix once, however the writes
// split it.
func TestPrefixWriter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"whole lines", []string{"a\nb\n"}, "p: a\np: b\n"},
		{"a line in two writes", []string{"a", "b\nc\n"}, "p: ab\np: c\n"},
		{"a write ending on a line break", []string{"a\n", "b"}, "p: a\np: b"},
		{"empty writes", []string{"", "a", "", "\n"}, "p: a\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			w := &prefixWriter{prefix: "p: ", w: &b}
			for _, s := range tc.writes {
				n, err := w.Write([]byte(s))
				require.NoError(t, err)
				assert.Equal(t, len(s), n)
			}
			assert.Equal(t, tc.want, b.String())
		})
	}
}
