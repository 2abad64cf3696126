package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeGatewayAPI runs the README's Gateway API paragraph as
// written: its objects through -gateway-api (the EndpointSlices' ports
// those of two backends of this test that answer as the README's do),
// each curl of its console block against the daemon with the output it
// shows, and the refusal of a CORS filter.
func TestReadmeGatewayAPI(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, sec, ok := strings.Cut(string(readme), "\n### Gateway API\n")
	require.True(t, ok, "no Gateway API paragraph")
	sec, _, _ = strings.Cut(sec, "\n## ")
	blocks := regexp.MustCompile("(?s)```(yaml|console)\n(.*?)```").FindAllStringSubmatch(sec, -1)
	require.Len(t, blocks, 3)
	objects, console, refusal := blocks[0][2], blocks[1][2], blocks[2][2]

	for name, readmePort := range map[string]string{"web": "9001", "api-canary": "9002"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s got %s %s X-Env=%q\n", name, r.Method, r.RequestURI, r.Header.Get("X-Env"))
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		objects = strings.Replace(objects, "port: "+readmePort+"}", "port: "+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)+"}", 1)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	require.NoError(t, os.WriteFile(path, []byte(objects), 0o644))
	d := startDaemon(t, "-gateway-api", path, "-https", "off")

	lines := strings.Split(strings.TrimSpace(console), "\n")
	require.True(t, strings.HasPrefix(lines[0], "$ paduraksad -gateway-api gateway.yaml -https off"), lines[0])
	curls := 0
	for i := 2; i < len(lines); i += 2 {
		cmd, want := lines[i], lines[i+1]
		require.True(t, strings.HasPrefix(cmd, "$ curl "), cmd)
		args := regexp.MustCompile(`"[^"]*"|\S+`).FindAllString(strings.TrimPrefix(cmd, "$ curl "), -1)
		req, _ := http.NewRequest("GET", "", nil)
		code, location := false, false
		for j := 0; j < len(args); j++ {
			a := strings.Trim(args[j], `"`)
			switch {
			case a == "-H":
				j++
				k, v, _ := strings.Cut(strings.Trim(args[j], `"`), ": ")
				if strings.EqualFold(k, "Host") {
					req.Host = v
				} else {
					req.Header.Set(k, v)
				}
			case a == "-o":
				j++
			case a == "-w":
				j++
				code = true
				location = strings.Contains(args[j], "%{redirect_url}")
			case strings.HasPrefix(a, "http://127.0.0.1:8080"):
				u := strings.Replace(a, "127.0.0.1:8080", d.addr, 1)
				r2, err := http.NewRequest("GET", u, nil)
				require.NoError(t, err)
				req.URL = r2.URL
			default:
				t.Fatalf("%s: argument %q", cmd, a)
			}
		}
		// As curl, which follows no redirect unless told.
		res, err := (&http.Client{Transport: d.tr, Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		got := strings.TrimSuffix(string(body), "\n")
		if code {
			got = strconv.Itoa(res.StatusCode)
		}
		if location {
			got += " " + res.Header.Get("Location")
		}
		assert.Equal(t, want, got, cmd)
		curls++
	}
	assert.Equal(t, 5, curls)

	// The refusal: a CORS filter after the second rule's header modifier.
	split := strings.Replace(objects, "          requestHeaderModifier: {set: [{name: X-Env, value: canary}]}\n",
		"          requestHeaderModifier: {set: [{name: X-Env, value: canary}]}\n        - type: CORS\n          cors: {allowOrigins: [\"https://shop.localhost\"]}\n", 1)
	require.NotEqual(t, objects, split)
	splitPath := filepath.Join(dir, "cors.yaml")
	require.NoError(t, os.WriteFile(splitPath, []byte(split), 0o644))
	var out, logs syncBuffer
	err = run(t.Context(), []string{"-gateway-api", splitPath, "-https", "off", "-listen", "127.0.0.1:0", "-admin", "127.0.0.1:0"}, options{stdout: &out, stderr: &logs})
	require.Error(t, err)
	wantLine := strings.Split(strings.TrimSpace(refusal), "\n")[1]
	assert.Equal(t, wantLine, "paduraksad: "+err.Error())
}
