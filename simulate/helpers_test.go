package simulate

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/tlsselect"
	"github.com/stretchr/testify/require"
)

// patienceTest bounds every wait of a test.
const patienceTest = 10 * time.Second

// testCert is a self-signed certificate for the test documents' names.
func testCert(t testing.TB) tls.Certificate {
	t.Helper()
	c, err := tlsselect.SelfSigned(time.Hour, "app.test", "*.app.test", "h1.test", "new.test", "h3.test", "old.test", "fixed.test", "cf.test", "127.0.0.1")
	require.NoError(t, err)
	return c
}

// compilerFor is a compiler with the certificate "c" of the test
// documents.
func compilerFor(t testing.TB) snapshot.Compiler {
	t.Helper()
	return snapshot.Compiler{Certificates: map[string]tlsselect.Source{"c": tlsselect.Static(testCert(t))}}
}

// publish applies a document to a new store and returns it.
func publish(t testing.TB, doc string, c snapshot.Compiler) *snapshot.Store {
	t.Helper()
	d, err := config.Decode([]byte(doc))
	require.NoError(t, err)
	store := new(snapshot.Store)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: store, Compiler: c})
	t.Cleanup(func() { pub.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), patienceTest)
	defer cancel()
	_, err = pub.Apply(ctx, d)
	require.NoError(t, err)
	return store
}

func decode(t testing.TB, doc string) *config.Document {
	t.Helper()
	d, err := config.Decode([]byte(doc))
	require.NoError(t, err)
	return d
}
