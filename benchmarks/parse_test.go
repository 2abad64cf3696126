package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseWrk(t *testing.T) {
	out := `Running 5s test @ http://127.0.0.21:8080/
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.10ms    1.20ms  45.00ms   90.00%
    Req/Sec    20.10k     1.00k   22.00k    80.00%
  Latency Distribution
     50%    2.63ms
     75%    3.00ms
     90%    4.00ms
     99%    1.02s
  100500 requests in 5.01s, 12.34MB read
  Socket errors: connect 1, read 12, write 0, timeout 3
  Non-2xx or 3xx responses: 500
Requests/sec:  20059.88
Transfer/sec:      2.46MB
`
	l, err := parseWrk(out)
	require.NoError(t, err)
	require.Equal(t, load{Requests: 100000, Errors: 516, Non2xx: 500, Elapsed: 5010 * time.Millisecond,
		P50: 2630 * time.Microsecond, P99: 1020 * time.Millisecond}, l)

	_, err = parseWrk("unable to connect to 127.0.0.21:8080 Connection refused\n")
	require.Error(t, err, "a run without a request count is an error, not zero requests")

	d, err := parseWrkDuration("2.00m")
	require.NoError(t, err)
	require.Equal(t, 2*time.Minute, d)
	d, err = parseWrkDuration("169.00us")
	require.NoError(t, err)
	require.Equal(t, 169*time.Microsecond, d)
}

func TestParseH2load(t *testing.T) {
	out := `starting benchmark...
spawning thread #0: 64 total client(s). Timing-based test with 0s of warm-up time and 5s of main duration for each client.

finished in 5.00s, 9247.00 req/s, 1.20MB/s
requests: 46235 total, 46875 started, 46235 done, 46200 succeeded, 35 failed, 30 errored, 5 timeout
status codes: 46190 2xx, 0 3xx, 10 4xx, 0 5xx
traffic: 6.01MB (6300000) total, 1.00MB (1000000) headers (space savings 90.00%), 600.00KB (601055) data
`
	l, err := parseH2load(out)
	require.NoError(t, err)
	require.Equal(t, load{Requests: 46190, Errors: 80, Non2xx: 10, Elapsed: 5 * time.Second}, l)

	logf := filepath.Join(t.TempDir(), "h2load.log")
	require.NoError(t, os.WriteFile(logf, []byte("1764590000000000\t200\t1500\n1764590000000100\t200\t500\n1764590000000200\t200\t900\n"), 0o600))
	lat, err := h2loadLatencies(logf)
	require.NoError(t, err)
	require.Equal(t, 900*time.Microsecond, percentile(lat, 0.5))
	require.Equal(t, 1500*time.Microsecond, percentile(lat, 0.99))
}

// TestCheckAnswer: the preflight fails every way a misconfigured peer
// could look fast.
func TestCheckAnswer(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	zw.Write(htmlPage)
	zw.Close()
	tiny := []byte(tinyBody)
	cases := []struct {
		name                    string
		status, proto, encoding string
		body, want              []byte
		gzip                    bool
		ok                      bool
	}{
		{"good", "200", "1.1", "", tiny, tiny, false, true},
		{"good gzip", "200", "1.1", "gzip", zipped.Bytes(), htmlPage, true, true},
		{"404 from a default host", "404", "1.1", "", []byte("no such host"), tiny, false, false},
		{"HTTP/1.1 where h2 was asked", "200", "1.1", "", tiny, tiny, false, false},
		{"no compression", "200", "1.1", "", htmlPage, htmlPage, true, false},
		{"compressed unasked", "200", "1.1", "gzip", zipped.Bytes(), htmlPage, false, false},
		{"gzip label on plain bytes", "200", "1.1", "gzip", htmlPage, htmlPage, true, false},
		{"truncated body", "200", "1.1", "", tiny[:5], tiny, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantProto := "1.1"
			if c.name == "HTTP/1.1 where h2 was asked" {
				wantProto = "2"
			}
			err := checkAnswer(c.status, c.proto, wantProto, c.encoding, c.body, c.want, c.gzip)
			if c.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(101-i)*time.Millisecond)
	}
	require.Equal(t, 50*time.Millisecond, percentile(ds, 0.50))
	require.Equal(t, 99*time.Millisecond, percentile(ds, 0.99))
	require.Equal(t, time.Duration(0), percentile(nil, 0.5))
}

func TestParseOptions(t *testing.T) {
	env := map[string]string{"QUICK": "1", "PEERS": "nginx, paduraksad"}
	o, err := parseOptions(nil, func(k string) string { return env[k] }, io.Discard)
	require.NoError(t, err)
	require.True(t, o.quick)
	require.Equal(t, 1, o.rounds)
	require.Equal(t, []string{kindNginx, kindDaemon}, o.peers)
	require.Equal(t, allScenarios, o.scenarios)

	o, err = parseOptions([]string{"-rounds", "5"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	require.False(t, o.quick)
	require.Equal(t, 5, o.rounds)
	require.Equal(t, 5*time.Second, o.measure)

	_, err = parseOptions([]string{"-peers", "envoy"}, func(string) string { return "" }, io.Discard)
	require.ErrorContains(t, err, `unknown peer "envoy"`)
	_, err = parseOptions([]string{"-scenarios", "h1,h4"}, func(string) string { return "" }, io.Discard)
	require.ErrorContains(t, err, `unknown scenario "h4"`)
}
