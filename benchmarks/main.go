// Command benchmarks runs the gateway against nginx, HAProxy, Caddy and a
// plain httputil.ReverseProxy on one machine, in one run: throughput and
// CPU per request over HTTP/1.1, HTTP/2, TLS and HTTP/3, config apply
// time, reload churn, streams across a reload, balancing and health, and
// memory per idle connection. See README.md beside this file.
//
//	go run ./benchmarks              # the full run (about 15 minutes)
//	QUICK=1 go run ./benchmarks      # under 3 minutes
//	go run ./benchmarks -h           # flags: peers, scenarios, rounds
//
// Progress goes to stderr, one line per measurement; the report, a
// markdown document, to stdout and to a results file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(roleMain(role, os.Args[1:]))
	}
	opt, err := parseOptions(os.Args[1:], os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchmarks:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, opt, os.Stderr)
	if rep != nil {
		fmt.Print(rep.markdown())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchmarks:", err)
		os.Exit(1)
	}
}

// roleEnv names the role a re-executed copy of this program plays: the
// upstream and the Go load generator run as their own processes, pinned
// to the load core, so their CPU is never the proxy's.
const roleEnv = "PADURAKSA_BENCH_ROLE"

func roleMain(role string, args []string) int {
	var err error
	switch role {
	case "upstream":
		err = upstreamMain(args)
	case "goload":
		err = goloadMain(args)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, role+":", err)
		return 1
	}
	return 0
}

// newRoleCmd runs argv (this program, perhaps behind taskset) as role.
func newRoleCmd(ctx context.Context, role string, argv ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), roleEnv+"="+role)
	return cmd
}

// Scenario IDs, in the order they run.
const (
	scH1      = "h1"
	scGzip    = "h1-gzip"
	scGzipRep = "h1-gzip-rep"
	scH2      = "h2-tls"
	scTLSNew  = "tls-new"
	scH3      = "h3"
	scApply   = "apply"
	scChurn   = "churn"
	scStreams = "streams"
	scBalance = "balance"
	scLimits  = "h1-limit"
	scFleet   = "fleet"
	scMemory  = "memory"
)

var allScenarios = []string{scH1, scGzip, scGzipRep, scH2, scTLSNew, scH3, scApply, scChurn, scStreams, scBalance, scLimits, scFleet, scMemory}

type options struct {
	quick      bool
	rounds     int
	warm       time.Duration
	measure    time.Duration
	peers      []string
	scenarios  []string
	install    bool
	out        string // results file; empty: benchmarks/out/results-TIME.md
	net        string // the first three octets of every loopback address used
	work       string // work directory; empty: a new temporary one, removed after
	hostCounts []int
	applyReps  int
	churnFor   time.Duration
	idleConns  int
	healthCap  time.Duration // longest wait for a backend to come back
	buildFlags []string      // extra go build flags for the daemon and the baseline
	args       []string      // as given, for the report
}

func parseOptions(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("benchmarks", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", getenv("QUICK") == "1", "short run, under 3 minutes (also QUICK=1)")
	rounds := fs.Int("rounds", 0, "rounds of the throughput scenarios; 0: 3, or 1 with -quick (also ROUNDS)")
	peers := fs.String("peers", cmpOr(getenv("PEERS"), strings.Join(allKinds, ",")), "comma-separated peers (also PEERS)")
	scen := fs.String("scenarios", cmpOr(getenv("SCENARIOS"), strings.Join(allScenarios, ",")),
		"comma-separated scenarios (also SCENARIOS): "+strings.Join(allScenarios, ","))
	noInstall := fs.Bool("no-install", false, "never install Debian packages; skip what is missing")
	out := fs.String("out", "", "results file; default benchmarks/out/results-<time>.md")
	netPrefix := fs.String("net", "127.0.0", "first three octets of the loopback addresses to use")
	work := fs.String("work", "", "work directory to keep (configs, logs); default a temporary one")
	conns := fs.Int("idle-conns", 0, "idle connections of the memory scenario; 0: 10000, or 5000 with -quick")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	o := options{quick: *quick, rounds: *rounds, install: !*noInstall, out: *out, net: *netPrefix,
		work: *work, idleConns: *conns, args: args}
	if o.rounds == 0 {
		o.rounds, _ = strconv.Atoi(getenv("ROUNDS"))
	}
	if o.quick {
		o.rounds = cmpOrInt(o.rounds, 1)
		o.warm, o.measure = time.Second, 2*time.Second
		o.hostCounts, o.applyReps = []int{100, 500, 2000}, 2
		o.churnFor, o.healthCap = 2*time.Second, 5*time.Second
		o.idleConns = cmpOrInt(o.idleConns, 5000)
	} else {
		o.rounds = cmpOrInt(o.rounds, 3)
		o.warm, o.measure = 2*time.Second, 5*time.Second
		o.hostCounts, o.applyReps = []int{100, 500, 2000}, 5
		o.churnFor, o.healthCap = 10*time.Second, 15*time.Second
		o.idleConns = cmpOrInt(o.idleConns, 10000)
	}
	var err error
	if o.peers, err = pickList(*peers, allKinds, "peer"); err != nil {
		return o, err
	}
	if o.scenarios, err = pickList(*scen, allScenarios, "scenario"); err != nil {
		return o, err
	}
	return o, nil
}

// pickList splits a comma-separated list and refuses names not in known.
func pickList(list string, known []string, what string) ([]string, error) {
	var out []string
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("unknown %s %q (want %s)", what, name, strings.Join(known, ", "))
		}
		out = append(out, name)
	}
	return out, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func cmpOrInt(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

func (o options) has(sc string) bool { return slices.Contains(o.scenarios, sc) }
