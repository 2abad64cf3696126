package fleet_test

import (
	"fmt"

	"github.com/paduraksa/paduraksa/fleet"
	"github.com/paduraksa/paduraksa/gate"
)

// ExampleNewCerts shows what NewCerts refuses: every problem at once,
// each with its stable code. In a server, Client is the fleet's etcd
// client; then certs.Run(ctx) runs beside the ACME manager, whose
// Storage is certs and whose Challenges are certs.Challenges() (see the
// package documentation).
func ExampleNewCerts() {
	_, err := fleet.NewCerts(fleet.CertsConfig{Challenges: &gate.ChallengeStore{}, Prefix: "paduraksa/", LockTTL: 100})
	fmt.Println(err)
	// Output:
	// client: an etcd client is required (fleet.etcd.client.missing)
	// prefix: a prefix starts with /, as /paduraksa/ does (fleet.etcd.prefix.invalid)
	// lockTtl: must be 0 (the default) or at least 1s (fleet.certs.duration.invalid)
}
