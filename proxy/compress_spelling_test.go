package proxy_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/proxy"
)

// TestAcceptEncodingSpellings sends Accept-Encoding over a raw socket in
// several spellings (case, aliases, q-values well and badly written, white
// space, duplicates, repeated fields) and checks the coding chosen, that a
// compressed answer decodes to the upstream's page and that every answer
// varies on Accept-Encoding, compressed or not.
func TestAcceptEncodingSpellings(t *testing.T) {
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		io.WriteString(w, page)
	}))
	addr, _ := setup{site: &proxy.SiteConfig{Compression: proxy.Compression{Enabled: true}}}.start(t, up)
	cases := []struct {
		fields []string // the Accept-Encoding lines, raw
		want   string   // Content-Encoding, "" for identity
		name   string   // the field's name as sent, "" for Accept-Encoding
	}{
		{[]string{"gzip"}, "gzip", ""},
		{[]string{"GZIP"}, "gzip", ""},
		{[]string{"GZip"}, "gzip", ""},
		{[]string{"x-gzip"}, "gzip", ""},
		{[]string{"X-GZIP"}, "gzip", ""},
		{[]string{"gzip;q=0"}, "", ""},
		{[]string{"gzip;Q=0"}, "", ""},
		{[]string{"gzip ; q=0"}, "", ""},
		{[]string{"gzip;q=0.000"}, "", ""},
		{[]string{"gzip;q=0.001"}, "gzip", ""},
		{[]string{"gzip;q=1.0001"}, "", ""}, // a malformed q-value ignores the element
		{[]string{"gzip;q=2"}, "", ""},
		{[]string{"gzip;q="}, "", ""},
		{[]string{"gzip;q=-1"}, "", ""},
		{[]string{"g zip"}, "", ""},
		{[]string{"gzip2"}, "", ""},
		{[]string{"gzip_"}, "", ""},
		{[]string{"identity"}, "", ""},
		{[]string{"*"}, "gzip", ""},
		{[]string{"*;q=0"}, "", ""},
		{[]string{"*;q=0, gzip"}, "gzip", ""},
		{[]string{"gzip;q=0, *"}, "zstd", ""},      // "*" covers the codings not named
		{[]string{"gzip;q=0", "gzip"}, "gzip", ""}, // the higher q of a coding named twice
		{[]string{"gzip;q=0", "br"}, "br", ""},
		{[]string{"br;q=0", "gzip;q=0"}, "", ""},
		{[]string{",,gzip,,"}, "gzip", ""},
		{[]string{"\tgzip\t"}, "gzip", ""},
		{[]string{""}, "", ""},
		{[]string{"gzip"}, "gzip", "accept-encoding"},
		{[]string{"gzip"}, "gzip", "ACCEPT-ENCODING"},
		{[]string{"gzip"}, "", "Accept_Encoding"}, // another field: no coding asked
		{[]string{"gzip"}, "", "Accept-Encodings"},
	}
	for _, c := range cases {
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		head := "GET / HTTP/1.1\r\nHost: app.test\r\n"
		name := c.name
		if name == "" {
			name = "Accept-Encoding"
		}
		for _, f := range c.fields {
			head += name + ": " + f + "\r\n"
		}
		_, err = io.WriteString(conn, head+"Connection: close\r\n\r\n")
		require.NoError(t, err)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err, "%s %q", c.name, c.fields)
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err, "%s %q", c.name, c.fields)
		conn.Close()
		assert.Equal(t, http.StatusOK, res.StatusCode, "%s %q", c.name, c.fields)
		assert.Equal(t, c.want, res.Header.Get("Content-Encoding"), "%s %q", c.name, c.fields)
		assert.Equal(t, "Accept-Encoding", res.Header.Get("Vary"), "%s %q", c.name, c.fields)
		switch c.want {
		case "gzip":
			zr, err := gzip.NewReader(bytes.NewReader(body))
			require.NoError(t, err, "%s %q", c.name, c.fields)
			plain, err := io.ReadAll(zr)
			require.NoError(t, err, "%s %q", c.name, c.fields)
			assert.Equal(t, page, string(plain), "%s %q", c.name, c.fields)
		case "":
			assert.Equal(t, page, string(body), "%s %q", c.name, c.fields)
		default:
			assert.NotEmpty(t, body, "%s %q", c.name, c.fields)
		}
	}
}
