package tlsselect_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// ExampleACME wires an ACME certificate manager into a Selector: the
// gate serving plain HTTP answers the CA's HTTP-01 requests from the
// store, the manager is the Source of the "shop" certificate, and OnReady
// publishes a new Table once the certificate is there. Until then the
// host gets the default certificate. (The example does not start the
// manager, so it talks to no CA.)
func ExampleACME() {
	cacheDir, _ := os.MkdirTemp("", "acme")
	defer os.RemoveAll(cacheDir)
	challenges := &gate.ChallengeStore{} // gate.Config.Challenges of the port-80 gate

	sel := tlsselect.NewSelector(nil) // its TLSConfig serves the HTTPS listener
	var cfg tlsselect.Config
	publish := func() {
		table, err := tlsselect.New(cfg)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, w := range table.Warnings() {
			if w.Code == tlsselect.CodeCertificatePending {
				fmt.Println(w.Path, w.Msg)
			}
		}
		sel.Swap(table)
	}

	certs, err := tlsselect.NewACME(tlsselect.ACMEConfig{
		DirectoryURL: "https://acme-staging-v02.api.letsencrypt.org/directory",
		Email:        "hostmaster@shop.example",
		CacheDir:     cacheDir,
		Challenges:   challenges,
		OnReady:      func(tlsselect.ACMEReady) { publish() },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer certs.Close()

	fallback, _ := tlsselect.SelfSigned(30*24*time.Hour, "localhost")
	cfg = tlsselect.Config{
		Certificates: []tlsselect.Certificate{
			{ID: "shop", Source: certs},
			{ID: "fallback", Source: tlsselect.Static(fallback)},
		},
		Hosts:              []tlsselect.Host{{Names: []string{"shop.example", "www.shop.example"}, Certificate: "shop"}},
		DefaultCertificate: "fallback",
	}
	publish()
	s := sel.Table().Select("www.shop.example", tlsselect.TCP)
	// In a server: certs.Start(ctx) orders the certificate, and OnReady
	// publishes the Table that serves it.
	fmt.Println(s.Match, s.Reason)
	// Output:
	// certificates[0].source tlsselect: certificate pending: acme: no valid certificate for shop.example, www.shop.example yet
	// default pending
}

// ExampleACMEDir shows the directory storage's layout, the one
// ACMEConfig.CacheDir makes: a key is a file under the directory.
func ExampleACMEDir() {
	root, _ := os.MkdirTemp("", "acme")
	defer os.RemoveAll(root)
	st := tlsselect.ACMEDir(root)
	ctx := context.Background()
	ca := "acme-v02.api.letsencrypt.org%2Fdirectory"
	if err := st.Store(ctx, ca+"/certificates/shop.pem", []byte("key and chain")); err != nil {
		fmt.Println(err)
		return
	}
	keys, _ := st.List(ctx, ca+"/certificates/")
	fmt.Println(keys)
	_, err := os.Stat(filepath.Join(root, ca, "certificates", "shop.pem"))
	fmt.Println("file there:", err == nil)
	unlock, _ := st.Lock(ctx, ca+"/certificates/shop.pem") // held while the certificate is ordered
	unlock()
	// Output:
	// [acme-v02.api.letsencrypt.org%2Fdirectory/certificates/shop.pem]
	// file there: true
}
