package secrets_test

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/secrets"
	"github.com/paduraksa/paduraksa/tlsselect"
)

func TestOpenCreatesThenKeeps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.json")
	k, err := secrets.Open(path)
	require.NoError(t, err)
	require.Len(t, k.Affinity, secrets.KeyLen)
	require.Len(t, k.Ticket, secrets.KeyLen)
	assert.NotEqual(t, k.Affinity, k.Ticket)
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left beside it")

	again, err := secrets.Open(path)
	require.NoError(t, err)
	assert.Equal(t, k, again, "a second start reads the same keys")

	// The owners of the keys take them.
	_, err = balance.NewAffinity(balance.AffinityConfig{}, k.Affinity)
	assert.NoError(t, err)
	_, err = tlsselect.New(tlsselect.Config{TicketSecret: k.Ticket})
	assert.NoError(t, err)
}

func TestOpenConcurrentAgree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.json")
	var wg sync.WaitGroup
	got := make([]secrets.Keys, 8)
	errs := make([]error, len(got))
	for i := range got {
		wg.Go(func() { got[i], errs[i] = secrets.Open(path) })
	}
	wg.Wait()
	for i := range got {
		require.NoError(t, errs[i])
		assert.Equal(t, got[0], got[i], "every process starting at once reads the keys one of them wrote")
	}
}

func TestMarshalParseRoundTrip(t *testing.T) {
	k := secrets.New()
	got, err := secrets.Parse(k.Marshal())
	require.NoError(t, err)
	assert.Equal(t, k, got)
}

// TestRotateRoundTrip: a rotation keeps the affinity key, makes a fresh
// ticket secret and keeps the one it replaced, and the format carries it;
// keys never rotated marshal without the optional fields.
func TestRotateRoundTrip(t *testing.T) {
	k := secrets.New()
	assert.NotContains(t, string(k.Marshal()), "previousTicketSecret")
	assert.NotContains(t, string(k.Marshal()), "rotated")
	at := time.Date(2026, 12, 2, 5, 0, 0, 700, time.FixedZone("WIB", 7*3600))
	r := k.Rotate(at)
	assert.Equal(t, k.Affinity, r.Affinity, "the affinity key is never rotated")
	assert.Equal(t, k.Ticket, r.PreviousTicket)
	assert.Len(t, r.Ticket, secrets.KeyLen)
	assert.NotEqual(t, k.Ticket, r.Ticket)
	assert.Equal(t, at.UTC().Truncate(time.Second), r.Rotated)
	got, err := secrets.Parse(r.Marshal())
	require.NoError(t, err)
	assert.Equal(t, r, got)
	assert.Contains(t, string(r.Marshal()), `"rotated": "2026-12-01T22:00:00Z"`)
}

func codes(err error) []string {
	var out []string
	for _, p := range problem.All(err) {
		out = append(out, p.Code+"@"+p.Path)
	}
	return out
}

func TestOpenRefuses(t *testing.T) {
	good := secrets.New().Marshal()
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(make([]byte, n)) }
	cases := []struct {
		name  string
		make  func(t *testing.T, path string)
		codes []string
	}{
		{"directory", func(t *testing.T, p string) { require.NoError(t, os.Mkdir(p, 0o700)) }, []string{secrets.CodeNotRegular + "@"}},
		{"fifo", func(t *testing.T, p string) { require.NoError(t, syscall.Mkfifo(p, 0o600)) }, []string{secrets.CodeNotRegular + "@"}},
		{"group readable", func(t *testing.T, p string) { write(t, p, good, 0o640) }, []string{secrets.CodePermissions + "@"}},
		{"world readable", func(t *testing.T, p string) { write(t, p, good, 0o604) }, []string{secrets.CodePermissions + "@"}},
		{"group writable", func(t *testing.T, p string) { write(t, p, good, 0o620) }, []string{secrets.CodePermissions + "@"}},
		{"empty", func(t *testing.T, p string) { write(t, p, nil, 0o600) }, []string{secrets.CodeMalformed + "@"}},
		{"not json", func(t *testing.T, p string) { write(t, p, []byte("affinityKey=x\n"), 0o600) }, []string{secrets.CodeMalformed + "@"}},
		{"unknown field", func(t *testing.T, p string) {
			write(t, p, []byte(`{"version":1,"affinityKey":"`+b64(32)+`","ticketSecret":"`+b64(32)+`","extra":1}`), 0o600)
		}, []string{secrets.CodeMalformed + "@"}},
		{"two objects", func(t *testing.T, p string) { write(t, p, append(append([]byte{}, good...), good...), 0o600) }, []string{secrets.CodeMalformed + "@"}},
		{"too large", func(t *testing.T, p string) {
			write(t, p, append(append([]byte{}, good...), strings.Repeat(" ", secrets.MaxFileBytes)...), 0o600)
		}, []string{secrets.CodeTooLarge + "@"}},
		{"every field wrong", func(t *testing.T, p string) {
			write(t, p, []byte(`{"version":2,"affinityKey":"`+b64(16)+`","ticketSecret":"not base64!"}`), 0o600)
		}, []string{secrets.CodeVersionUnknown + "@version", secrets.CodeAffinityKeyInvalid + "@affinityKey", secrets.CodeTicketSecretInvalid + "@ticketSecret"}},
		{"optional fields wrong", func(t *testing.T, p string) {
			write(t, p, []byte(`{"version":1,"affinityKey":"`+b64(32)+`","ticketSecret":"`+b64(32)+`","previousTicketSecret":"`+b64(31)+`","rotated":"yesterday"}`), 0o600)
		}, []string{secrets.CodePreviousInvalid + "@previousTicketSecret", secrets.CodeRotatedInvalid + "@rotated"}},
		{"fields missing", func(t *testing.T, p string) { write(t, p, []byte(`{}`), 0o600) },
			[]string{secrets.CodeVersionUnknown + "@version", secrets.CodeAffinityKeyInvalid + "@affinityKey", secrets.CodeTicketSecretInvalid + "@ticketSecret"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "secrets.json")
			tc.make(t, path)
			before := content(path)
			k, err := secrets.Open(path)
			require.Error(t, err)
			assert.Equal(t, secrets.Keys{}, k)
			assert.Equal(t, tc.codes, codes(err))
			assert.Contains(t, err.Error(), path, "the message names the file")
			after := content(path)
			assert.Equal(t, before, after, "a refused file is left as it was")
		})
	}
}

func TestOpenMissingDirectory(t *testing.T) {
	_, err := secrets.Open(filepath.Join(t.TempDir(), "nodir", "secrets.json"))
	require.Error(t, err)
	var p *secrets.Error
	require.True(t, errors.As(err, &p))
	assert.Equal(t, secrets.CodeUnreadable, p.Code)
}

// content is what a regular file at path holds, its mode included; ""
// for anything else (reading a FIFO would block).
func content(path string) string {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return ""
	}
	b, _ := os.ReadFile(path)
	return st.Mode().String() + string(b)
}

func write(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, data, mode))
	require.NoError(t, os.Chmod(path, mode)) // past the umask
}

func FuzzParse(f *testing.F) {
	f.Add(secrets.New().Marshal())
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"version":1,"affinityKey":"","ticketSecret":""}`))
	f.Add([]byte(`{"version":1} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := secrets.Parse(data)
		if err != nil {
			for _, p := range problem.All(err) {
				if !strings.HasPrefix(p.Code, "secrets.") {
					t.Fatalf("code %q", p.Code)
				}
			}
			if len(problem.All(err)) == 0 {
				t.Fatalf("an error without a problem: %v", err)
			}
			return
		}
		if len(k.Affinity) != secrets.KeyLen || len(k.Ticket) != secrets.KeyLen {
			t.Fatalf("accepted keys of %d and %d bytes", len(k.Affinity), len(k.Ticket))
		}
		again, err := secrets.Parse(k.Marshal())
		if err != nil || string(again.Affinity) != string(k.Affinity) || string(again.Ticket) != string(k.Ticket) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
