package fleet_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/paduraksa/paduraksa/fleet"
	"github.com/paduraksa/paduraksa/fleet/etcdtest"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/secrets"
)

const secretsKey = fleet.DefaultPrefix + "secrets"

// member is one instance's secrets, on a client of its own, with its
// logs.
type member struct {
	s    *fleet.Secrets
	cli  *clientv3.Client
	logs *logBuffer
	stop context.CancelFunc
	done chan error
}

// newMember makes the secrets of one instance on endpoint.
func newMember(t *testing.T, endpoint, name string, cfg fleet.SecretsConfig) *member {
	t.Helper()
	m := &member{cli: etcdtest.ClientOf(t, endpoint), logs: &logBuffer{}}
	cfg.Client, cfg.Instance = m.cli, name
	cfg.Logger = slog.New(slog.NewTextHandler(m.logs, nil))
	s, err := fleet.NewSecrets(cfg)
	require.NoError(t, err)
	m.s = s
	return m
}

// run runs the member's secrets until it is stopped or the test ends.
func (m *member) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	m.stop, m.done = cancel, make(chan error, 1)
	go func() { m.done <- m.s.Run(ctx) }()
	t.Cleanup(m.halt)
}

// halt stops Run and waits for it.
func (m *member) halt() {
	if m.stop == nil {
		return
	}
	m.stop()
	<-m.done
	m.stop = nil
}

func load(t *testing.T, s *fleet.Secrets) secrets.Keys {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	k, err := s.Load(ctx)
	require.NoError(t, err)
	return k
}

// stored is what etcd holds at key, and its mod revision.
func stored(t *testing.T, c *clientv3.Client, key string) (secrets.Keys, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, key)
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	k, err := secrets.Parse(resp.Kvs[0].Value)
	require.NoError(t, err)
	return k, resp.Kvs[0].ModRevision
}

// assertNotLogged checks that no key of ks is in logs, raw, in base64 or
// in hex.
func assertNotLogged(t *testing.T, logs string, ks ...secrets.Keys) {
	t.Helper()
	for _, k := range ks {
		for _, b := range [][]byte{k.Affinity, k.Ticket, k.PreviousTicket} {
			if b == nil {
				continue
			}
			for _, form := range []string{string(b), base64.StdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b), hex.EncodeToString(b)} {
				require.NotContains(t, logs, form, "a secret is in the logs")
			}
		}
	}
}

// TestSecretsCreatedOnceAgree: instances loading at once from an etcd
// without secrets agree on the keys one of them created in etcd; one
// loading later, even with a seed of its own, reads them and overwrites
// nothing.
func TestSecretsCreatedOnceAgree(t *testing.T) {
	e := etcdtest.Start(t)
	ms := make([]*member, 6)
	for i := range ms {
		ms[i] = newMember(t, e.Endpoint, "i"+itoa(int64(i)), fleet.SecretsConfig{})
	}
	got := make([]secrets.Keys, len(ms))
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got[i], errs[i] = m.s.Load(ctx)
		})
	}
	wg.Wait()
	inEtcd, rev := stored(t, e.Client(), secretsKey)
	created, logs := 0, ""
	for i, m := range ms {
		require.NoError(t, errs[i])
		assert.Equal(t, inEtcd, got[i], "every instance has the keys in etcd")
		assert.Equal(t, inEtcd, m.s.Keys())
		if strings.Contains(m.logs.String(), "secrets created in etcd") {
			created++
		} else {
			assert.Contains(t, m.logs.String(), "secrets read from etcd")
		}
		logs += m.logs.String()
	}
	assert.Equal(t, 1, created, "one instance created the secrets")
	assert.Len(t, inEtcd.Affinity, secrets.KeyLen)
	assert.WithinDuration(t, time.Now(), inEtcd.Rotated, time.Minute)
	assert.Nil(t, inEtcd.PreviousTicket)

	seeded := newMember(t, e.Endpoint, "late", fleet.SecretsConfig{Seed: secrets.New()})
	assert.Equal(t, inEtcd, load(t, seeded.s), "a late instance reads the fleet's keys, not its seed")
	assert.Contains(t, seeded.logs.String(), "the affinity keys differ")
	_, after := stored(t, e.Client(), secretsKey)
	assert.Equal(t, rev, after, "nothing was written")
	assertNotLogged(t, logs+seeded.logs.String(), inEtcd, seeded.s.Keys())
}

// TestSecretsSeedWhenNone: an etcd without secrets takes the seed's, the
// keys of a gateway's secrets file, so its sticky clients and tickets
// carry into the fleet.
func TestSecretsSeedWhenNone(t *testing.T) {
	e := etcdtest.Start(t)
	seed := secrets.New()
	m := newMember(t, e.Endpoint, "a", fleet.SecretsConfig{Prefix: "/seeded/", Seed: seed})
	k := load(t, m.s)
	assert.Equal(t, seed.Affinity, k.Affinity)
	assert.Equal(t, seed.Ticket, k.Ticket)
	inEtcd, _ := stored(t, e.Client(), "/seeded/secrets")
	assert.Equal(t, k, inEtcd)
	assert.Contains(t, m.logs.String(), "from=\"the seed\"")
	assertNotLogged(t, m.logs.String(), seed)
}

// TestSecretsRotationByElection: of three instances one is elected and
// rotates the ticket secret every period, keeping the previous one;
// every instance installs each rotation from its watch. A leader that
// dies (its client gone, its lease unrevoked) frees the election when its
// lease expires, and another instance goes on rotating.
func TestSecretsRotationByElection(t *testing.T) {
	e := etcdtest.Start(t)
	cfg := fleet.SecretsConfig{RotationPeriod: 3 * time.Second, LeaseTTL: time.Second, RetryPeriod: 50 * time.Millisecond}
	ms := []*member{newMember(t, e.Endpoint, "a", cfg), newMember(t, e.Endpoint, "b", cfg), newMember(t, e.Endpoint, "c", cfg)}
	first := load(t, ms[0].s)
	for _, m := range ms[1:] {
		require.Equal(t, first, load(t, m.s))
	}
	for _, m := range ms {
		m.run(t)
	}
	leader := func(ms []*member) *member {
		t.Helper()
		var l *member
		waitFor(t, "one instance to lead", func() bool {
			n := 0
			for _, m := range ms {
				if m.s.Leading() {
					l, n = m, n+1
				}
			}
			return n == 1
		})
		return l
	}
	rotatedFrom := func(ms []*member, from []byte) secrets.Keys {
		t.Helper()
		var k secrets.Keys
		waitFor(t, "every instance to install the rotation", func() bool {
			for _, m := range ms {
				if k = m.s.Keys(); string(k.PreviousTicket) != string(from) {
					return false
				}
			}
			return true
		})
		for _, m := range ms {
			assert.Equal(t, k, m.s.Keys(), "every instance installs the same secrets")
		}
		inEtcd, _ := stored(t, e.Client(), secretsKey)
		assert.Equal(t, inEtcd, k)
		assert.Equal(t, first.Affinity, k.Affinity, "the affinity key is never rotated")
		assert.NotEqual(t, from, k.Ticket)
		return k
	}
	l := leader(ms)
	second := rotatedFrom(ms, first.Ticket)
	assert.Contains(t, l.logs.String(), "elected to rotate the ticket secret")

	// The leader dies: its client goes without revoking its lease.
	require.NoError(t, l.cli.Close())
	l.halt()
	var rest []*member
	for _, m := range ms {
		if m != l {
			rest = append(rest, m)
		}
	}
	next := leader(rest)
	third := rotatedFrom(rest, second.Ticket)
	assert.Contains(t, next.logs.String(), "ticket secret rotated in etcd")

	var logs string
	for _, m := range ms {
		logs += m.logs.String()
	}
	assert.Contains(t, logs, "ticket secret installed; the previous one still opens tickets")
	assertNotLogged(t, logs, first, second, third)
}

// TestSecretsStopFreesTheElection: a leader that stops resigns, and
// another instance leads at once, long before the lease would expire.
func TestSecretsStopFreesTheElection(t *testing.T) {
	e := etcdtest.Start(t)
	cfg := fleet.SecretsConfig{LeaseTTL: time.Minute, RetryPeriod: 50 * time.Millisecond}
	a, b := newMember(t, e.Endpoint, "a", cfg), newMember(t, e.Endpoint, "b", cfg)
	load(t, a.s)
	a.run(t)
	waitFor(t, "a to lead", a.s.Leading)
	load(t, b.s)
	b.run(t)
	a.halt()
	start := time.Now()
	waitFor(t, "b to lead", b.s.Leading)
	assert.Less(t, time.Since(start), 30*time.Second, "b led before a's lease expired")
	assert.False(t, a.s.Leading())
}

// TestSecretsRefusedInEtcd: secrets in etcd that are not of the format
// stop Load with the secrets package's codes; once running, a bad value
// is logged and the installed secrets keep serving, and a good one after
// it is installed.
func TestSecretsRefusedInEtcd(t *testing.T) {
	e := etcdtest.Start(t)
	c := e.Client()
	putSecrets := func(v string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.Put(ctx, secretsKey, v)
		require.NoError(t, err)
	}
	putSecrets(`{"version":1,"affinityKey":"c2hvcnQ=","ticketSecret":"x"}`)
	m := newMember(t, e.Endpoint, "a", fleet.SecretsConfig{RetryPeriod: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := m.s.Load(ctx)
	var codes []string
	for _, p := range problem.All(err) {
		codes = append(codes, p.Code+"@"+p.Path)
	}
	assert.Equal(t, []string{secrets.CodeAffinityKeyInvalid + "@affinityKey", secrets.CodeTicketSecretInvalid + "@ticketSecret"}, codes)
	assert.Equal(t, secrets.Keys{}, m.s.Keys(), "nothing installed")

	good := secrets.New()
	putSecrets(string(good.Marshal()))
	require.Equal(t, good, load(t, m.s))
	m.run(t)
	putSecrets("not json")
	waitFor(t, "the refusal logged", func() bool { return strings.Contains(m.logs.String(), "secrets in etcd refused") })
	assert.Equal(t, good, m.s.Keys())

	rotated := good.Rotate(time.Now())
	putSecrets(string(rotated.Marshal()))
	waitFor(t, "the rotation installed", func() bool { return string(m.s.Keys().Ticket) == string(rotated.Ticket) })
	assert.Equal(t, rotated, m.s.Keys())
	assertNotLogged(t, m.logs.String(), good, rotated)
}

// TestSecretsRotateNow: an operator's rotation, from any instance, is one
// transaction every instance installs; a key gone is ErrNoSecrets.
func TestSecretsRotateNow(t *testing.T) {
	e := etcdtest.Start(t)
	a := newMember(t, e.Endpoint, "a", fleet.SecretsConfig{})
	b := newMember(t, e.Endpoint, "b", fleet.SecretsConfig{})
	k := load(t, a.s)
	load(t, b.s)
	b.run(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := a.s.Rotate(ctx)
	require.NoError(t, err)
	assert.Equal(t, k.Ticket, r.PreviousTicket)
	waitFor(t, "b to install the rotation", func() bool { return string(b.s.Keys().Ticket) == string(r.Ticket) })

	_, err = e.Client().Delete(ctx, secretsKey)
	require.NoError(t, err)
	_, err = a.s.Rotate(ctx)
	assert.True(t, errors.Is(err, fleet.ErrNoSecrets), "%v", err)
	waitFor(t, "b to log the deletion", func() bool { return strings.Contains(b.logs.String(), "secrets deleted in etcd") })
	assert.Equal(t, r.Ticket, b.s.Keys().Ticket, "the installed secrets keep serving")
}

func TestNewSecretsProblems(t *testing.T) {
	_, err := fleet.NewSecrets(fleet.SecretsConfig{Prefix: "paduraksa", RotationPeriod: time.Millisecond,
		LeaseTTL: 1500 * time.Millisecond, RetryPeriod: -1, Seed: secrets.Keys{Affinity: []byte("short")}})
	var codes []string
	for _, p := range problem.All(err) {
		codes = append(codes, p.Code+"@"+p.Path)
	}
	assert.Equal(t, []string{fleet.CodeClientMissing + "@client", fleet.CodePrefixInvalid + "@prefix",
		fleet.CodeRotationInvalid + "@rotationPeriod", fleet.CodeLeaseInvalid + "@leaseTTL",
		fleet.CodePeriodInvalid + "@retryPeriod", fleet.CodeSeedInvalid + "@seed"}, codes)
}
