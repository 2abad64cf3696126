package fleet_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/paduraksa/paduraksa/fleet"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// An instance's state needs its source and a name that fits in a key;
// NewInstance reports every problem of its config at once, each with a
// stable code and a path.
func ExampleNewInstance() {
	_, err := fleet.NewInstance(fleet.InstanceConfig{Name: "edge/1"})
	for _, p := range problem.All(err) {
		fmt.Println(p.Code, "at", p.Path)
	}
	// Output:
	// fleet.instance.etcd.missing at etcd
	// fleet.instance.name.invalid at name
}

// The state an instance writes at PREFIX+"instances/"+NAME is JSON, as
// GET /cluster lists it.
func ExampleInstanceState() {
	at := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	s := fleet.InstanceState{Instance: "a", Serving: fleet.Serving{Version: "42", Revision: 3, At: at},
		Started: at.Add(-time.Hour), Engines: []fleet.Engine{{Name: "etcd", Reachable: true}, {Name: "redis", Reachable: true}}}
	b, _ := json.Marshal(s)
	fmt.Println(string(b))
	// Output:
	// {"instance":"a","version":"42","revision":3,"appliedAt":"2026-12-02T05:00:00Z","started":"2026-12-02T04:00:00Z","engines":[{"name":"etcd","reachable":true},{"name":"redis","reachable":true}]}
}
