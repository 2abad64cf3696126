package health

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/paduraksa/paduraksa/upstream"
)

// ActivePolicy turns the result of one probe into the destination's active
// verdict. The [Monitor] calls it on a probe worker, once per probe, with the
// destination's run of consecutive failures already counted; the returned
// state replaces the active verdict and reason explains a change.
// Implementations must be safe for concurrent use.
type ActivePolicy interface {
	Evaluate(r ProbeResult) (state upstream.HealthState, reason string)
}

// ProbeResult is the outcome of one active probe.
type ProbeResult struct {
	Cluster     *upstream.Cluster
	Destination *upstream.Destination
	// StatusCode is the probe response's status, or 0 when Err is set.
	StatusCode int
	// Err is the transport error, if the probe got no response.
	Err error
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

// ConsecutiveFailures is the built-in active policy: a destination becomes
// unhealthy after Threshold failed probes in a row, and healthy again on the
// first probe that passes.
type ConsecutiveFailures struct{}

var _ ActivePolicy = ConsecutiveFailures{}

// Evaluate implements [ActivePolicy].
func (ConsecutiveFailures) Evaluate(r ProbeResult) (upstream.HealthState, string) {
	if r.OK {
		return upstream.Healthy, "probe passed with status " + strconv.Itoa(r.StatusCode)
	}
	if r.ConsecutiveFailures >= r.Threshold {
		return upstream.Unhealthy, strconv.Itoa(r.ConsecutiveFailures) + " consecutive probes failed, last: " + describe(r)
	}
	return r.Destination.ActiveHealth(), ""
}

func describe(r ProbeResult) string {
	if r.Err != nil {
		return r.Err.Error()
	}
	return "status " + strconv.Itoa(r.StatusCode)
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
