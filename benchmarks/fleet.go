package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// fleetSize is the number of daemons of the fleet scenario, and
// fleetReps the puts measured at each host count.
const (
	fleetSize = 3
	fleetReps = 20
)

// etcdPort is where the suite's etcd serves clients, on its own address.
const etcdPort = 2379

// fleet measures the daemon as a fleet: three instances on one etcd
// (Debian's, on the load generator's core), each started with -etcd;
// the document, N hosts each with its own upstream plus one extra host,
// is put once into etcd (its JSON gateway, one HTTP request), and the
// time is from the put until every instance answers the extra host's new
// name with 200 (each polled every millisecond on a new connection).
func (s *suite) fleet(ctx context.Context) {
	sec := section{title: "Fleet: from an etcd put until all three instances serve it",
		intro: fmt.Sprintf("Three daemons with -etcd on one etcd (Debian's, on the load generator's core; the daemons share the proxy "+
			"core). The document (N hosts, each with its own upstream, plus one extra host) is put at /bench/config through "+
			"etcd's JSON gateway; the clock runs from the put until every instance answers the extra host's new name with 200, "+
			"each polled every millisecond on a new connection. %d puts per host count.", fleetReps),
		head: []string{"hosts", "median ms", "p99 ms", "min ms", "max ms", "served", "problems"}}
	defer func() { s.rep.add(sec) }()
	p := s.daemon()
	if p == nil {
		return
	}
	if !p.flags["etcd"] {
		sec.after = append(sec.after, "not available in this build (no -etcd)")
		return
	}
	etcd, err := s.startEtcd()
	if err != nil {
		sec.after = append(sec.after, "etcd failed to start: "+oneLine(err.Error()))
		return
	}
	defer etcd.stop(time.Second)
	put := func(doc []byte) error { return s.etcdPut("/bench/config", doc) }
	seq := 0
	for _, n := range s.opt.hostCounts {
		if n > 500 || ctx.Err() != nil {
			continue
		}
		row := func(cells ...string) { sec.rows = append(sec.rows, append([]string{strconv.Itoa(n)}, cells...)) }
		doc, err := p.document(p.baseConf().withHosts(n, "new-0.test"))
		if err == nil {
			err = put(doc)
		}
		if err != nil {
			row("", "", "", "", "", "the first put: "+oneLine(err.Error()))
			continue
		}
		procs, addrs, err := s.startFleet(p)
		if err != nil {
			for _, pr := range procs {
				pr.stop(time.Second)
			}
			row("", "", "", "", "", "start: "+oneLine(err.Error()))
			continue
		}
		var took []float64
		var problems []string
		for range fleetReps {
			seq++
			name := "new-" + strconv.Itoa(seq) + ".test"
			doc, err := p.document(p.baseConf().withHosts(n, name))
			if err != nil {
				problems = append(problems, oneLine(err.Error()))
				continue
			}
			t0 := time.Now()
			if err := put(doc); err != nil {
				problems = append(problems, oneLine(err.Error()))
				continue
			}
			errs := make([]error, len(addrs))
			var wg sync.WaitGroup
			for i, a := range addrs {
				wg.Go(func() { errs[i] = pollAddr(a, name, procs[i], 15*time.Second) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				problems = append(problems, oneLine(err.Error()))
				continue
			}
			took = append(took, float64(time.Since(t0))/float64(time.Millisecond))
			// Let the old generations' workers wind down.
			time.Sleep(200 * time.Millisecond)
		}
		for _, pr := range procs {
			pr.stop(5 * time.Second)
		}
		row(num(median(took)), num(percentileOf(took, 99)), num(minOf(took)), num(slices.Max(append(took, 0))),
			fmt.Sprintf("%d of %d", len(took), fleetReps), joinProblems(problems))
		s.progress("fleet    %d hosts: median %s ms, p99 %s ms, %d of %d served", n, num(median(took)), num(percentileOf(took, 99)), len(took), fleetReps)
	}
}

// document renders the daemon's document for c.
func (p *peer) document(c confData) ([]byte, error) {
	files, err := p.configFiles(c)
	if err != nil {
		return nil, err
	}
	doc, ok := files["paduraksad.yaml"]
	if !ok {
		return nil, fmt.Errorf("no paduraksad.yaml rendered")
	}
	return doc, nil
}

// startFleet starts fleetSize daemons on the suite's etcd, each on an
// address of its own, and returns them with their plain HTTP addresses
// once each serves the main host.
func (s *suite) startFleet(p *peer) ([]*proc, []string, error) {
	var procs []*proc
	var addrs []string
	for i := range fleetSize {
		name := "fleet-" + strconv.Itoa(i+1)
		dir := filepath.Join(s.work, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return procs, nil, err
		}
		addr := net.JoinHostPort(s.ip(31+i), strconv.Itoa(httpPort))
		pr, err := startProc(name, proxyCPU, filepath.Join(dir, "log.txt"), []string{"GOMAXPROCS=1"}, s.bins.daemon,
			"-etcd", "http://"+net.JoinHostPort(s.ip(12), strconv.Itoa(etcdPort)), "-etcd-prefix", "/bench/", "-instance", name,
			"-listen", addr, "-https", "off", "-admin", "off", "-max-conns-per-ip", "-1", "-access-log", "off")
		if err != nil {
			return procs, nil, err
		}
		procs = append(procs, pr)
		addrs = append(addrs, addr)
	}
	for i, a := range addrs {
		if err := pollAddr(a, benchHost, procs[i], 30*time.Second); err != nil {
			return procs, nil, err
		}
	}
	return procs, addrs, nil
}

// startEtcd runs Debian's etcd, one member, on the load generator's core
// and an address of its own, and returns it once it answers.
func (s *suite) startEtcd() (*proc, error) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return nil, fmt.Errorf("etcd is not installed (apt-get install etcd-server)")
	}
	dir := filepath.Join(s.work, "etcd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	client := "http://" + net.JoinHostPort(s.ip(12), strconv.Itoa(etcdPort))
	peer := "http://" + net.JoinHostPort(s.ip(12), strconv.Itoa(etcdPort+1))
	p, err := startProc("etcd", loadCPU, filepath.Join(dir, "log.txt"), nil, bin, "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "default="+peer)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		// A put of a key of its own: etcd answers it once it has a leader.
		if err := s.etcdPut("/bench/ready", []byte("1")); err == nil {
			return p, nil
		} else if p.exited() || time.Now().After(deadline) {
			p.stop(time.Second)
			return nil, fmt.Errorf("etcd did not answer: %v: %s", err, p.tail(400))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// etcdPut puts key = value through etcd's JSON gateway (/v3/kv/put, keys
// and values in base64), so that the suite needs no etcd client.
func (s *suite) etcdPut(key string, value []byte) error {
	body, _ := json.Marshal(map[string]string{
		"key":   base64.StdEncoding.EncodeToString([]byte(key)),
		"value": base64.StdEncoding.EncodeToString(value),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+net.JoinHostPort(s.ip(12), strconv.Itoa(etcdPort))+"/v3/kv/put", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.adminClient.Do(req)
	if err != nil {
		return err
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd put %s: %d %s", key, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}

// percentileOf is the q-th percentile of xs by the nearest rank (of 20
// values, the 99th is the largest).
func percentileOf(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	i := int(math.Ceil(q/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}
