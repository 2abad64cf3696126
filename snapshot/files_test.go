//go:build unix

package snapshot

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/internal/namedfile"
	"github.com/paduraksa/paduraksa/internal/namedfile/namedfiletest"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/tlsselect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fileFields are the document's fields that name a file, with their
// paths in fileDoc.
var fileFields = []struct{ field, path string }{
	{"certFile", "certificates[0].certFile"},
	{"keyFile", "certificates[0].keyFile"},
	{"clientCAs", "hosts[0].tls.clientCAs"},
	{"caFile", "upstreams[0].http.tls.caFile"},
}

// fileDoc is a valid document of one TLS host that requires client
// certificates, with the field named by field (see fileFields) naming
// file instead of its test file ("" keeps them all).
func fileDoc(field, file string) *config.Document {
	doc := &config.Document{
		Certificates: []config.Certificate{{ID: "main", CertFile: "testdata/tls/cert.pem", KeyFile: "testdata/tls/key.pem"}},
		Hosts: []config.Host{{Names: []string{"app.test"}, Certificate: "main", Kind: "fixed", Fixed: &config.FixedAnswer{Body: "app\n"},
			TLS: &config.HostTLS{ClientAuth: "required", ClientCAs: "testdata/tls/cert.pem"}}},
		Upstreams: []config.Upstream{{ID: "u", Destinations: []config.Destination{{ID: "d", Address: "https://127.0.0.1:9"}},
			HTTP: config.UpstreamHTTP{TLS: config.UpstreamTLS{Trust: "caFile", CAFile: "testdata/tls/cert.pem"}}}},
	}
	switch field {
	case "certFile":
		doc.Certificates[0].CertFile = file
	case "keyFile":
		doc.Certificates[0].KeyFile = file
	case "clientCAs":
		doc.Hosts[0].TLS.ClientCAs = file
	case "caFile":
		doc.Upstreams[0].HTTP.TLS.CAFile = file
	}
	return doc
}

// TestNamedFilesRefused: certFile, keyFile and clientCAs naming a device,
// a FIFO no one writes to, a directory, a socket, a symlink to /dev/zero
// or a file over the cap are refused with the file's code at the field's
// path, at once, by Validate, a draft and a publish (of a Go value and of
// bytes).
func TestNamedFilesRefused(t *testing.T) {
	require.Empty(t, Validate(fileDoc("", "")), "the document is valid with its own files")
	_, pub := newPublisher(t)
	ctx := testContext(t)
	for _, f := range namedfiletest.Special(t) {
		for _, ff := range fileFields {
			t.Run(f.What+"/"+ff.field, func(t *testing.T) {
				doc := fileDoc(ff.field, f.Path)
				want := []string{f.Code + " " + ff.path}
				within(t, 2*time.Second, func() {
					got := Validate(doc)
					assert.Equal(t, want, codePaths(got), "Validate")
					if len(got) == 1 {
						assert.Contains(t, got[0].Msg, f.Path)
					}
					_, err := (&Compiler{}).Draft(doc)
					assert.Equal(t, want, codePaths(Problems(err)), "Draft")
					o, _ := pub.Apply(ctx, doc)
					assert.Equal(t, Refused, o.Status)
					assert.Equal(t, want, codePaths(o.Errors), "Publish")
					o, _ = pub.PublishData(docBytes(t, doc)).Wait(ctx)
					assert.Equal(t, want, codePaths(o.Errors), "PublishData")
				})
			})
		}
	}
}

// TestPublisherNeverWaitsOnAFIFO: a document naming a FIFO is refused at
// once, without a writer ever opening it, and the next document is
// applied.
func TestPublisherNeverWaitsOnAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "cert.pem")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	store, pub := newPublisher(t)
	ctx := testContext(t)
	within(t, 2*time.Second, func() {
		o, _ := pub.Apply(ctx, fileDoc("certFile", fifo))
		assert.Equal(t, []string{tlsselect.CodeFileNotRegular + " certificates[0].certFile"}, codePaths(o.Errors))
		o, err := pub.Apply(ctx, fileDoc("", ""))
		require.NoError(t, err)
		assert.Equal(t, Applied, o.Status)
	})
	assert.NotNil(t, store.Load().TLS())
}

// TestPublisherNeverWaitsOnASlowFile: document A names a file whose read
// hangs (a hung network file system); while A's read is stuck, documents
// B and C are published and applied, and a draft of A hangs on its own
// goroutine only; at its deadline A is refused with the timeout code at
// the field's path.
func TestPublisherNeverWaitsOnASlowFile(t *testing.T) {
	for _, ff := range fileFields {
		t.Run(ff.field, func(t *testing.T) {
			slow := filepath.Join(t.TempDir(), "slow.pem")
			cert, err := os.ReadFile("testdata/tls/cert.pem")
			require.NoError(t, err)
			opened, _ := namedfiletest.Hang(t, slow, cert)
			const deadline = 2 * time.Second
			store := new(Store)
			pub := NewPublisher(PublisherConfig{Store: store, Compiler: Compiler{FileTimeout: deadline}})
			t.Cleanup(func() { pub.Close() })
			ctx := testContext(t)

			start := time.Now()
			aDone := make(chan Outcome, 1)
			go func() {
				o, _ := pub.PublishData(docBytes(t, fileDoc(ff.field, slow))).Wait(ctx)
				aDone <- o
			}()
			receive(t, opened, 10*time.Second)
			draftDone := make(chan error, 1)
			go func() {
				_, err := (&Compiler{FileTimeout: deadline}).Draft(fileDoc(ff.field, slow))
				draftDone <- err
			}()
			receive(t, opened, 10*time.Second)

			b := fileDoc("", "")
			o, err := pub.Apply(ctx, b)
			require.NoError(t, err)
			assert.Equal(t, Applied, o.Status, "B, while A's read hangs")
			c := fileDoc("", "")
			c.Hosts[0].Fixed.Body = "c\n"
			o, err = pub.Apply(ctx, c)
			require.NoError(t, err)
			assert.Equal(t, Applied, o.Status, "C, while A's read hangs")
			applied := time.Since(start)
			select {
			case <-aDone:
				t.Fatal("A had an outcome before B and C were applied: they waited for its file, or its read did not hang")
			default:
			}
			require.Less(t, applied, deadline, "B and C were applied only after A's deadline: they waited for its file (or the machine is too slow for the test)")

			want := []string{tlsselect.CodeFileTimeout + " " + ff.path}
			a := receive(t, aDone, 10*time.Second)
			assert.GreaterOrEqual(t, time.Since(start), deadline)
			assert.Equal(t, Refused, a.Status)
			assert.Equal(t, want, codePaths(a.Errors))
			assert.Greater(t, a.Revision, o.Revision, "A is queued once its files are read, after C")
			assert.Equal(t, "c\n", store.Load().Document().Hosts[0].Fixed.Body, "C keeps serving")
			assert.Equal(t, want, codePaths(Problems(receive(t, draftDone, 10*time.Second))), "the draft")
			assert.Less(t, time.Since(start), deadline+time.Second, "the draft's deadline is its compiler's FileTimeout")
		})
	}
}

// TestDevZeroReadsNothing: a document naming /dev/zero reads nothing
// from it, and one naming a file that holds more than its size says (a
// /proc file, one growing) reads one byte past the cap at most.
func TestDevZeroReadsNothing(t *testing.T) {
	ctx := testContext(t)
	_, pub := newPublisher(t)
	for _, ff := range fileFields {
		zero := filepath.Join(t.TempDir(), "zero.pem")
		read := namedfiletest.Open(t, zero, func() (namedfile.File, error) { return os.Open("/dev/zero") })
		o, _ := pub.Apply(ctx, fileDoc(ff.field, zero))
		assert.Equal(t, []string{tlsselect.CodeFileNotRegular + " " + ff.path}, codePaths(o.Errors))
		assert.Zero(t, read.Load(), "bytes read from /dev/zero")

		endless := filepath.Join(t.TempDir(), "endless.pem")
		z, err := os.Open("/dev/zero")
		require.NoError(t, err)
		t.Cleanup(func() { z.Close() })
		read = namedfiletest.Serve(t, endless, 100, z)
		o, _ = pub.Apply(ctx, fileDoc(ff.field, endless))
		assert.Equal(t, []string{tlsselect.CodeFileTooLarge + " " + ff.path}, codePaths(o.Errors))
		assert.LessOrEqual(t, read.Load(), int64(tlsselect.MaxFileSize+1), "bytes read from an endless file")
	}
}

// TestUnchangedFilesAreNotReadAgain: publishes of a document whose files
// did not change take the files, the parsed client CAs and the TLS table
// from the serving snapshot; a file replaced on disk is read again.
func TestUnchangedFilesAreNotReadAgain(t *testing.T) {
	dir := t.TempDir()
	cas := filepath.Join(dir, "cas.pem")
	data, err := os.ReadFile("testdata/tls/cert.pem")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cas, data, 0o600))
	store, pub := newPublisher(t)
	ctx := testContext(t)
	doc := fileDoc("clientCAs", cas)
	_, err = pub.Apply(ctx, doc)
	require.NoError(t, err)
	first := store.Load()
	entry := first.files.byName[cas]
	require.NotNil(t, entry)

	changed := fileDoc("clientCAs", cas)
	changed.Hosts[0].Fixed.Body = "changed\n"
	o, err := pub.Apply(ctx, changed)
	require.NoError(t, err)
	require.Equal(t, Applied, o.Status)
	second := store.Load()
	assert.True(t, entry == second.files.byName[cas], "the file was read again")
	assert.True(t, first.tls == second.tls, "the TLS table was built again")
	o, _ = pub.Apply(ctx, fileDoc("clientCAs", cas))
	require.Equal(t, Applied, o.Status)
	o, _ = pub.Apply(ctx, fileDoc("clientCAs", cas))
	assert.Equal(t, Unchanged, o.Status)

	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.WriteFile(tmp, data, 0o600))
	require.NoError(t, os.Rename(tmp, cas))
	o, _ = pub.Apply(ctx, fileDoc("clientCAs", cas))
	assert.Equal(t, Applied, o.Status, "a file replaced on disk is picked up by an unchanged document")
	third := store.Load()
	assert.True(t, entry != third.files.byName[cas], "the replaced file was not read again")
	assert.True(t, second.tls != third.tls, "the TLS table of the replaced file was not built again")
}

// TestUpstreamCAFileReadAgain: an upstream CA file rewritten on disk is
// read by the next publish of the same document, whose cluster then
// checks against the new roots; unchanged, it is not compiled again.
func TestUpstreamCAFileReadAgain(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	first, err := os.ReadFile("testdata/tls/cert.pem")
	require.NoError(t, err)
	second, err := os.ReadFile("testdata/tls/cert2.pem")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(ca, first, 0o600))
	store, pub := newPublisher(t)
	ctx := testContext(t)
	cas := func() string { return store.Load().Cluster("u").Transport.(*proxy.Transport).Config().CAs }
	o, err := pub.Apply(ctx, fileDoc("caFile", ca))
	require.NoError(t, err)
	require.Equal(t, Applied, o.Status, "%v", o.Errors)
	assert.Equal(t, string(first), cas())
	o, _ = pub.Apply(ctx, fileDoc("caFile", ca))
	assert.Equal(t, Unchanged, o.Status)

	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.WriteFile(tmp, second, 0o600))
	require.NoError(t, os.Rename(tmp, ca))
	o, _ = pub.Apply(ctx, fileDoc("caFile", ca))
	assert.Equal(t, Applied, o.Status, "a CA file replaced on disk is picked up by an unchanged document")
	assert.Equal(t, string(second), cas())
}

// TestDecodeProblemsAloneRefuse: a publish whose only problems are
// decoding problems (an unknown field, a value of the wrong type), with
// everything else valid and different from what serves, changes
// nothing: the same snapshot serves, the history's current revision
// stays, and the runtime state of the new upstream is never made.
func TestDecodeProblemsAloneRefuse(t *testing.T) {
	a := startBackend(t, "a")
	for _, tc := range []struct {
		name, extra, code, path string
	}{
		{"unknown field", `"bogus":1,`, config.CodeDocumentFieldUnknown, "bogus"},
		{"type error", `"global":{"server":5},`, config.CodeDocumentFieldType, "global.server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := new(Store)
			c := Compiler{}
			pub := NewPublisher(PublisherConfig{Store: store, Compiler: c})
			t.Cleanup(func() { pub.Close() })
			ctx := testContext(t)
			_, err := pub.Apply(ctx, fleet(2, a))
			require.NoError(t, err)
			before := store.Load()
			cur, _ := pub.Current()

			next := docBytes(t, fleet(3, a)) // a third host and upstream
			require.Empty(t, Validate(fleet(3, a)))
			data := append([]byte("{"+tc.extra), next[1:]...)
			o, err := pub.PublishData(data).Wait(ctx)
			require.NoError(t, err)
			assert.Equal(t, Refused, o.Status)
			assert.Equal(t, []string{tc.code + " " + tc.path}, codePaths(o.Errors))
			assert.True(t, before == store.Load(), "another snapshot serves")
			now, _ := pub.Current()
			assert.Equal(t, cur.Revision, now.Revision)
			assert.Nil(t, pub.cfg.Compiler.Registry.Cluster("u2"), "the new upstream's cluster was made visible")
			status, _ := get(t, newClient(t), serve(t, store), "h2.test", "/")
			assert.Equal(t, 404, status, "the new host serves")
		})
	}
}

// TestReadDocument: a config file is read under the same rules, with the
// rule's code and no path, at once.
func TestReadDocument(t *testing.T) {
	for _, f := range namedfiletest.Special(t) {
		if f.Code == tlsselect.CodeFileTooLarge {
			continue // the cap of a document is larger: below
		}
		within(t, 2*time.Second, func() {
			_, err := ReadDocument(f.Path, 0)
			assert.Equal(t, []string{f.Code + " "}, codePaths(Problems(err)), f.What)
		})
	}
	name := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(name, []byte("hosts: []\n"), 0o600))
	b, err := ReadDocument(name, 10)
	require.NoError(t, err)
	assert.Equal(t, "hosts: []\n", string(b))
	_, err = ReadDocument(name, 9)
	assert.Equal(t, []string{tlsselect.CodeFileTooLarge + " "}, codePaths(Problems(err)))
	_, err = ReadDocument(filepath.Join(t.TempDir(), "nope.yaml"), 0)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
