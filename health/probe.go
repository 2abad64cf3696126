package health

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/paduraksa/paduraksa/upstream"
)

// ProbeResult is the outcome of one active probe.
type ProbeResult struct {
	Cluster     *upstream.Cluster
	Destination *upstream.Destination
	// StatusCode is the probe response's status, or 0 when Err is set.
	StatusCode int
	// Err is the transport error, if the probe got no response.
	Err error
	// Outcome is how the probe ended: Success when a response arrived,
	// whatever its status; else Err as the forwarder's classifier,
	// [upstream.ClassifyRoundTrip], reads it (ConnectError, TLSError,
	// Timeout, ...). A probe whose request could not be built is no
	// result: it is logged (outcome requestInvalid) and leaves the verdict
	// as it is.
	Outcome upstream.Outcome
	// OK reports whether the probe passed: a 2xx response.
	OK bool
	// ConsecutiveFailures counts the failed probes in a row, this one
	// included; it is 0 after a pass.
	ConsecutiveFailures int
	// Threshold is the cluster's [MetadataThreshold] (default 2).
	Threshold int
	// Metadata is the cluster's metadata, for custom policies.
	Metadata map[string]string
	// Duration is how long the probe took.
	Duration time.Duration
}

// ProbeTarget is what a probe request is built for.
type ProbeTarget struct {
	Cluster     *upstream.Cluster
	Destination *upstream.Destination
	// Path and Query are the cluster's probe path (default "/") and query
	// (without "?", possibly empty).
	Path, Query string
}

// ProbeRequestFactory builds probe requests. The default sends
// GET <scheme>://<health host><path>?<query> with the User-Agent
// "paduraksa-health". Implementations must be safe for concurrent use.
type ProbeRequestFactory interface {
	NewProbeRequest(ctx context.Context, t ProbeTarget) (*http.Request, error)
}

type defaultProbeRequests struct{}

func (defaultProbeRequests) NewProbeRequest(ctx context.Context, t ProbeTarget) (*http.Request, error) {
	u := t.Destination.Scheme() + "://" + t.Destination.HealthHost() + t.Path
	if t.Query != "" {
		u += "?" + t.Query
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "paduraksa-health")
	return req, nil
}

// probe sends one probe and applies the active policy's verdict.
func (m *Monitor) probe(ctx context.Context, j probeJob) {
	d, s, cs := j.d, j.r.s, j.r.cs
	st := stateOf(d)
	if d.Removed() || st == nil {
		return
	}
	start := m.clock.Now()
	res := ProbeResult{Cluster: cs.c, Destination: d, Threshold: s.active.threshold, Metadata: s.metadata}
	pctx, cancel := context.WithTimeout(ctx, s.active.timeout)
	req, err := m.probes.NewProbeRequest(pctx, ProbeTarget{Cluster: cs.c, Destination: d, Path: s.active.path, Query: s.active.query})
	if err != nil {
		cancel()
		m.unbuilt(cs.c, d, err)
		return
	}
	var resp *http.Response
	if resp, err = s.transport.RoundTrip(req); err == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		res.StatusCode = resp.StatusCode
	}
	res.Outcome = upstream.ClassifyRoundTrip(pctx, err)
	cancel()
	if ctx.Err() != nil {
		return // closing: a cancelled probe says nothing about the destination
	}
	res.Err = err
	res.OK = err == nil && res.StatusCode >= 200 && res.StatusCode < 300
	res.Duration = m.clock.Since(start)
	dm := d.Metrics()
	dm.Probe.Observe(res.Duration)
	if !res.OK {
		dm.ProbeFailures.Inc()
	}
	if res.OK {
		st.fails.Store(0)
	} else {
		res.ConsecutiveFailures = int(st.fails.Add(1))
	}
	state, reason := s.active.policy.Evaluate(res)
	if d.Removed() {
		return
	}
	if old := d.SetActiveHealth(state); old != state {
		m.change(d, CheckActive, old, state, reason)
	}
	if res.OK && !s.passive.keep && d.PassiveHealth() == upstream.Unhealthy && st.passiveAt.Load() < start.UnixNano() {
		m.endPassive(d, st, "active probe passed")
	}
	if res.OK {
		m.probePassed(d, st, start)
	}
}

// unbuilt reports a probe whose request could not even be built (a URL
// that does not parse, a factory's own error). The destination never saw
// it, so it says nothing about the destination: its verdict is left as it
// is, and the probe is no failure. What made it is the config's: an
// address, path or query that NewCluster, ClusterConfig.Validate and
// Config.Validate refuse, or a ProbeRequestFactory's bug. It is logged
// at Error with the outcome the forwarder gives a request it cannot send,
// requestInvalid.
func (m *Monitor) unbuilt(c *upstream.Cluster, d *upstream.Destination, err error) {
	m.log.Error("health probe not sent: its request could not be built (a problem of the config, not of the destination, whose verdict stays)",
		"cluster", c.ID(), "destination", d.ID(), "outcome", upstream.RequestInvalid.String(), "err", err)
}
