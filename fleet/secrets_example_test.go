package fleet_test

import (
	"fmt"
	"time"

	"github.com/paduraksa/paduraksa/fleet"
	"github.com/paduraksa/paduraksa/snapshot"
)

// ExampleNewSecrets: a config is checked whole, before anything is read
// from etcd; each problem has a stable code and the field's path. With a
// client, a gateway then loads the secrets, hands them to its compiler and
// runs them:
//
//	sec, _ := fleet.NewSecrets(fleet.SecretsConfig{Client: cli, Instance: "a"})
//	keys, err := sec.Load(ctx) // read, or created once for the fleet
//	compiler := snapshot.Compiler{AffinityKey: keys.Affinity, TicketSecrets: sec.Tickets()}
//	go sec.Run(ctx) // installs each rotation; rotates while elected
func ExampleNewSecrets() {
	_, err := fleet.NewSecrets(fleet.SecretsConfig{Prefix: "paduraksa/", RotationPeriod: time.Millisecond, LeaseTTL: 1500 * time.Millisecond})
	for _, p := range snapshot.Problems(err) {
		fmt.Println(p.Code, p.Path)
	}
	// Output:
	// fleet.etcd.client.missing client
	// fleet.etcd.prefix.invalid prefix
	// fleet.secrets.rotationPeriod.invalid rotationPeriod
	// fleet.secrets.leaseTTL.invalid leaseTTL
}
