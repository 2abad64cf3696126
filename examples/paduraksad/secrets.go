package main

import (
	"fmt"

	"github.com/paduraksa/paduraksa/secrets"
)

// loadSecrets gives the compiler the affinity key and the ticket secret
// of the -secrets file, creating it when absent, so that sticky clients
// and TLS tickets outlive a restart and an upgrade. Without the flag the
// compiler draws both at random.
func (a *app) loadSecrets() error {
	if a.f.secretsPath == "" {
		return nil
	}
	k, err := secrets.Open(a.f.secretsPath)
	if err != nil {
		return fmt.Errorf("-secrets: %w", err)
	}
	a.compiler.AffinityKey, a.compiler.TicketSecret = k.Affinity, k.Ticket
	a.log.Info("secrets read", "file", a.f.secretsPath)
	return nil
}
