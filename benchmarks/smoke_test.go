package main

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMain lets this test binary play the upstream and the load generator
// when the suite re-executes itself, as the command does.
func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(roleMain(role, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// TestSmoke runs the h1 and HTTP/3 scenarios for one round against the
// daemon alone, without installing anything: the suite's whole path
// (build, upstream, config template, start, curl and quic-go preflights,
// wrk and this program's HTTP/3 generator, CPU from /proc, table) so that
// it cannot rot. The figures themselves are not judged.
func TestSmoke(t *testing.T) {
	dir := t.TempDir()
	// An address block of its own, so two runs on one machine never meet.
	netPrefix := "127." + strconv.Itoa(100+rand.IntN(100)) + "." + strconv.Itoa(rand.IntN(250))
	opt, err := parseOptions([]string{"-peers", kindDaemon, "-scenarios", scH1 + "," + scH3, "-rounds", "1", "-no-install",
		"-net", netPrefix, "-work", dir + "/work", "-out", dir + "/results.md"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	opt.warm, opt.measure = time.Second, time.Second
	if raceEnabled {
		// A daemon built with -race is several times slower: a window
		// of one second on a loaded machine can complete nothing.
		opt.buildFlags = []string{"-race"}
		opt.measure = 3 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	rep, err := run(ctx, opt, &progress)
	require.NoError(t, err, progress.String())

	row := daemonRow(t, rep, "Throughput: HTTP/1.1 keep-alive, 13 B", progress.String())
	checkRow(t, row, progress.String())
	require.Equal(t, "0", row[7], "errors")
	// The daemon serves HTTP/3 since it has -https: the quic-go generator
	// and its preflight (which insists on HTTP/3) ran against it. Its
	// client gives up on an answer after 10 s, which a loaded machine
	// can reach: errors are not judged here.
	checkRow(t, daemonRow(t, rep, "Throughput: HTTP/3", progress.String()), progress.String())

	saved, err := os.ReadFile(dir + "/results.md")
	require.NoError(t, err)
	require.Contains(t, string(saved), "| "+kindDaemon+" | "+row[1]+" |")
	require.Contains(t, progress.String(), "h1       paduraksad round 1/1:")
	require.Contains(t, progress.String(), "h3       paduraksad round 1/1:")
}

// daemonRow is the daemon's row of the table whose title starts with title.
func daemonRow(t *testing.T, rep *report, title, progress string) []string {
	t.Helper()
	for _, sec := range rep.sections {
		if strings.HasPrefix(sec.title, title) {
			for _, r := range sec.rows {
				if r[0] == kindDaemon {
					return r
				}
			}
		}
	}
	t.Fatalf("no daemon row under %q in\n%s\nprogress:\n%s", title, rep.markdown(), progress)
	return nil
}

// checkRow: a measured row, with requests, CPU from /proc and the
// upstream's body.
func checkRow(t *testing.T, row []string, progress string) {
	t.Helper()
	rps, err := strconv.ParseFloat(row[1], 64)
	require.NoError(t, err, "req/s cell %q (progress:\n%s)", row[1], progress)
	require.Greater(t, rps, 0.0)
	cpu, _, _ := strings.Cut(row[2], " ")
	us, err := strconv.ParseFloat(cpu, 64)
	require.NoError(t, err, "CPU cell %q", row[2])
	require.Greater(t, us, 0.0, "the daemon's process tree used no CPU: /proc not read")
	require.Equal(t, strconv.Itoa(len(tinyBody)), row[8], "bytes per response")
}
