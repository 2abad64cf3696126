package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/paduraksa/paduraksa/fleet"
	"github.com/paduraksa/paduraksa/secrets"
)

// loadSecrets gives the compiler the affinity key and the ticket secret,
// so that sticky clients and TLS tickets outlive a restart and an
// upgrade, and with -etcd hold across the fleet. Without -etcd they are
// the -secrets file's, created when absent. With -etcd they are etcd's
// (fleet.Secrets): read at start, or created there once, from the
// -secrets file when one is given (a gateway that grows into a fleet
// keeps its clients) or fresh; the ticket secret is then rotated by the
// instance the fleet elects and installed on every instance as it
// changes, until the daemon stops. Without either flag the compiler draws
// both at random.
func (a *app) loadSecrets(ctx context.Context) error {
	var seed secrets.Keys
	if a.f.secretsPath != "" {
		k, err := secrets.Open(a.f.secretsPath)
		if err != nil {
			return fmt.Errorf("-secrets: %w", err)
		}
		if a.f.etcd == "" {
			a.compiler.AffinityKey, a.compiler.TicketSecret = k.Affinity, k.Ticket
			a.log.Info("secrets read", "file", a.f.secretsPath)
			return nil
		}
		seed = k
	}
	if a.f.etcd == "" {
		return nil
	}
	cli, err := a.etcdClient()
	if err != nil {
		return err
	}
	sec, err := fleet.NewSecrets(fleet.SecretsConfig{Client: cli, Prefix: a.f.etcdPrefix, Instance: a.f.instance,
		RotationPeriod: a.f.ticketRotation, Seed: seed, Logger: a.log.With("instance", a.f.instance)})
	if err != nil {
		return fmt.Errorf("-etcd-prefix, -ticket-secret-rotation: %w", err)
	}
	k, err := sec.Load(ctx)
	if err != nil {
		return fmt.Errorf("-etcd: %s: %w", sec.Key(), err)
	}
	a.compiler.AffinityKey, a.compiler.TicketSecrets = k.Affinity, sec.Tickets()
	attrs := []any{"etcd", a.f.etcd, "key", sec.Key(), "ticketSecretRotation", a.f.ticketRotation}
	if a.f.secretsPath != "" {
		attrs = append(attrs, "seed", a.f.secretsPath)
	}
	a.log.Info("secrets read", attrs...)
	a.runUntilClose(context.Background(), func(ctx context.Context) {
		if err := sec.Run(ctx); !errors.Is(err, context.Canceled) {
			a.log.Error("secrets watch stopped", "err", err)
		}
	})
	return nil
}
