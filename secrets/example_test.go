package secrets_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/paduraksa/paduraksa/secrets"
)

// A gateway reads its keys at start, and the file is made the first time.
func Example() {
	dir, _ := os.MkdirTemp("", "secrets-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "secrets.json")

	first, err := secrets.Open(path) // created: mode 0600, fresh keys
	if err != nil {
		fmt.Println(err)
		return
	}
	second, _ := secrets.Open(path) // a restart: the same keys
	st, _ := os.Stat(path)
	fmt.Println(st.Mode().Perm(), string(first.Affinity) == string(second.Affinity), string(first.Ticket) == string(second.Ticket))

	// A snapshot.Compiler takes them: AffinityKey: first.Affinity,
	// TicketSecret: first.Ticket.

	os.Chmod(path, 0o644)
	_, err = secrets.Open(path)
	fmt.Println(err != nil)
	// Output:
	// -rw------- true true
	// true
}
