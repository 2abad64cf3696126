package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/paduraksa/paduraksa/internal/problem"
)

// ErrUnreachable is [Etcd.Instances]'s answer while the source finds
// etcd unreachable.
var ErrUnreachable = errors.New("fleet: etcd is unreachable")

// DefaultLeaseTTL is how long an instance's state outlives its last
// keep-alive by default.
const DefaultLeaseTTL = 5 * time.Second

// Problem codes of [NewInstance]; they are stable.
const (
	CodeEtcdMissing     = "fleet.instance.etcd.missing"     // at "etcd"
	CodeNameInvalid     = "fleet.instance.name.invalid"     // at "name"
	CodeLeaseTTLInvalid = "fleet.instance.leaseTTL.invalid" // at "leaseTTL"
)

// InstanceConfig configures an [Instance]. Etcd and Name are required.
type InstanceConfig struct {
	// Etcd is the instance's source: the state is written with its
	// client, under its prefix, from what it records.
	Etcd *Etcd
	// Name names the instance in the fleet: its key is
	// Prefix+"instances/"+Name. It may not hold a "/".
	Name string
	// LeaseTTL is the lease's time to live, in whole seconds: how long a
	// dead instance's state stays listed. 0 means [DefaultLeaseTTL].
	LeaseTTL time.Duration
	// Engines, when set, returns the reachability of the engines the
	// instance depends on besides etcd (Redis), written with its state.
	Engines func() []Engine
	// Logger receives each loss and recovery of the lease; nil discards.
	Logger *slog.Logger
}

// Engine is the reachability of one engine an instance depends on.
type Engine struct {
	Name      string    `json:"name"`
	Reachable bool      `json:"reachable"`
	Since     time.Time `json:"since,omitzero"`
	Error     string    `json:"error,omitempty"`
}

// InstanceState is what an instance writes of itself at
// Prefix+"instances/"+Name, in JSON.
type InstanceState struct {
	// Instance is the instance's name.
	Instance string `json:"instance"`
	// Serving is the version it serves (the key's mod revision), its own
	// revision of it and when it applied it.
	Serving
	// LastRefusal is the latest version it refused, with every problem.
	LastRefusal *Refusal `json:"lastRefusal,omitempty"`
	// Started is when the instance started.
	Started time.Time `json:"started"`
	// Engines is the reachability of etcd and the other engines, as the
	// instance saw them when it wrote its state.
	Engines []Engine `json:"engines"`
}

// Instance keeps an instance's state in etcd under a lease: rewritten at
// each outcome its source records and each change of its engines, kept
// alive while the instance runs, gone a LeaseTTL after it stopped
// answering. Make it with [NewInstance] and call Run.
type Instance struct {
	cfg     InstanceConfig
	key     string
	log     *slog.Logger
	started time.Time
}

// NewInstance returns the instance of cfg, or every problem of cfg.
func NewInstance(cfg InstanceConfig) (*Instance, error) {
	var probs problem.List
	if cfg.Etcd == nil {
		probs.Add(CodeEtcdMissing, "etcd", "the instance's etcd source is required")
	}
	if cfg.Name == "" || strings.Contains(cfg.Name, "/") {
		probs.Add(CodeNameInvalid, "name", "an instance's name is not empty and holds no /")
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.LeaseTTL < time.Second {
		probs.Add(CodeLeaseTTLInvalid, "leaseTTL", "must be 0 (the default) or at least one second")
	}
	if err := probs.Err(); err != nil {
		return nil, err
	}
	log := orDiscard(cfg.Logger)
	return &Instance{cfg: cfg, key: cfg.Etcd.cfg.Prefix + "instances/" + cfg.Name, log: log, started: time.Now()}, nil
}

// Key returns the key of the instance's state.
func (in *Instance) Key() string { return in.key }

// State returns the instance's state now.
func (in *Instance) State() InstanceState {
	st := in.cfg.Etcd.Status()
	etcd := Engine{Name: "etcd", Reachable: st.Reachable, Since: st.Since}
	if st.Err != nil {
		etcd.Error = st.Err.Error()
	}
	s := InstanceState{Instance: in.cfg.Name, Serving: st.Serving, LastRefusal: st.LastRefusal, Started: in.started,
		Engines: []Engine{etcd}}
	if in.cfg.Engines != nil {
		s.Engines = append(s.Engines, in.cfg.Engines()...)
	}
	return s
}

// Run writes the state under a lease and keeps it alive until ctx is
// done, then revokes the lease, so that a stopped instance leaves the
// list at once; it returns ctx's error. While etcd is away it tries
// again each third of LeaseTTL, with a new lease once the old one
// expired.
func (in *Instance) Run(ctx context.Context) error {
	cli := in.cfg.Etcd.cfg.Client
	period := in.cfg.LeaseTTL / 3
	tick := time.NewTicker(period)
	defer tick.Stop()
	var lease clientv3.LeaseID
	var written []byte // the state last written under lease
	failed := false
	defer func() {
		if lease != 0 {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), period)
			cli.Revoke(rctx, lease)
			cancel()
		}
	}()
	for {
		changed := in.cfg.Etcd.changes()
		err := in.write(ctx, &lease, &written, period)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && !failed:
			in.log.Warn("instance state not written in etcd", "key", in.key, "err", err)
		case err == nil && failed:
			in.log.Info("instance state written in etcd again", "key", in.key)
		}
		failed = err != nil
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-tick.C:
		}
	}
}

// write keeps the lease alive, granting a new one when there is none or
// it expired, and puts the state when it changed or the lease is new.
func (in *Instance) write(ctx context.Context, lease *clientv3.LeaseID, written *[]byte, timeout time.Duration) error {
	cli := in.cfg.Etcd.cfg.Client
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if *lease != 0 {
		if _, err := cli.KeepAliveOnce(wctx, *lease); errors.Is(err, rpctypes.ErrLeaseNotFound) {
			*lease, *written = 0, nil
		} else if err != nil {
			return err
		}
	}
	if *lease == 0 {
		g, err := cli.Grant(wctx, int64(in.cfg.LeaseTTL/time.Second))
		if err != nil {
			return err
		}
		*lease = g.ID
	}
	data, err := json.Marshal(in.State())
	if err != nil {
		return err
	}
	if bytes.Equal(data, *written) {
		return nil
	}
	if _, err := cli.Put(wctx, in.key, string(data), clientv3.WithLease(*lease)); err != nil {
		return err
	}
	*written = data
	return nil
}

// MaxInstances is the most instance keys [Etcd.Instances] reads, the
// first by name: one read, and the GET /cluster answer made of it, stay
// bounded whatever the prefix holds.
const MaxInstances = 1024

// Instances reads the state of every instance of the fleet, sorted by
// name, at most [MaxInstances]; a value that is not an instance's state
// is left out. While the
// source finds etcd unreachable it answers [ErrUnreachable] at once
// rather than wait for a read that cannot succeed.
func (e *Etcd) Instances(ctx context.Context) ([]InstanceState, error) {
	if st := e.Status(); !st.Reachable {
		return nil, fmt.Errorf("%w since %s: %v", ErrUnreachable, st.Since.UTC().Format(time.RFC3339), st.Err)
	}
	resp, err := e.cfg.Client.Get(ctx, e.cfg.Prefix+"instances/", clientv3.WithPrefix(), clientv3.WithLimit(MaxInstances))
	if err != nil {
		return nil, err
	}
	out := make([]InstanceState, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var s InstanceState
		if json.Unmarshal(kv.Value, &s) == nil && s.Instance != "" {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b InstanceState) int { return strings.Compare(a.Instance, b.Instance) })
	return out, nil
}
