package tlsselect

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cryptoErrUnrecognizedName is QUIC's CRYPTO_ERROR for the TLS alert
// unrecognized_name (112): 0x100 + the alert (RFC 9001, 4.8).
const cryptoErrUnrecognizedName = quic.TransportErrorCode(0x100 + 112)

// requireUnrecognizedName fails unless err is the peer's CRYPTO_ERROR for
// unrecognized_name.
func requireUnrecognizedName(t *testing.T, err error) {
	t.Helper()
	var te *quic.TransportError
	require.True(t, errors.As(err, &te), "not a transport error: %v", err)
	assert.True(t, te.Remote, "the error is not the server's: %v", err)
	assert.Equal(t, cryptoErrUnrecognizedName, te.ErrorCode, "%v", err)
}

// TestQUICByName: a quic-go client gets each HTTP/3 host's certificate
// with ALPN h3; a host without HTTP/3, an unknown name and no name are
// refused with unrecognized_name, and counted.
func TestQUICByName(t *testing.T) {
	f := newFixture(t)
	sel := NewSelector(mustTable(t, f.config(FallbackRefuse, FallbackRefuse)))
	addr := serveQUIC(t, sel.QUICConfig())

	c, err := dialQUIC(t, addr, clientConfig(f.ca.pool, "H3.test", "h3"))
	require.NoError(t, err)
	st := c.ConnectionState().TLS
	assert.Equal(t, "h3", st.NegotiatedProtocol)
	assert.Equal(t, uint16(tls.VersionTLS13), st.Version)
	assert.True(t, st.PeerCertificates[0].Equal(f.h3.Leaf))

	for _, tc := range []struct {
		name string
		cfg  *tls.Config
	}{
		// h3b.test shares h3.test's certificate but has no HTTP/3.
		{"host without HTTP/3", clientConfig(f.ca.pool, "h3b.test", "h3")},
		{"another host without HTTP/3", clientConfig(f.ca.pool, "a.test", "h3")},
		{"unknown SNI", clientConfig(f.ca.pool, "nobody.test", "h3")},
		{"no SNI", &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h3"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dialQUIC(t, addr, tc.cfg)
			requireUnrecognizedName(t, err)
		})
	}
	assert.Equal(t, Reasons{NoSNI: 1, UnknownSNI: 1, NoHTTP3: 2}, sel.Stats().Refused)
}

// TestQUICFallback: with the default fallback, QUIC handshakes for no
// known host get the default certificate only when DefaultTLS has HTTP/3.
func TestQUICFallback(t *testing.T) {
	f := newFixture(t)
	cfg := f.config("", "")
	sel := NewSelector(mustTable(t, cfg))
	addr := serveQUIC(t, sel.QUICConfig())
	_, err := dialQUIC(t, addr, clientConfig(f.ca.pool, "nobody.test", "h3"))
	requireUnrecognizedName(t, err)

	cfg.DefaultTLS.HTTP3 = true
	sel.Swap(mustTable(t, cfg))
	skip := &tls.Config{InsecureSkipVerify: true, ServerName: "nobody.test", NextProtos: []string{"h3"}}
	c, err := dialQUIC(t, addr, skip)
	require.NoError(t, err)
	assert.True(t, c.ConnectionState().TLS.PeerCertificates[0].Equal(f.dflt.Leaf))
	assert.Equal(t, Reasons{UnknownSNI: 1}, sel.Stats().Defaulted)
	assert.Equal(t, Reasons{UnknownSNI: 1}, sel.Stats().Refused)
}

// TestHTTP3Request: an HTTP/3 request through quic-go's http3 server on
// the Selector's QUIC config, wrapped by http3.ConfigureTLSConfig as many
// embedders will, reaches the handler with the host's certificate.
func TestHTTP3Request(t *testing.T) {
	f := newFixture(t)
	sel := NewSelector(mustTable(t, f.config(FallbackRefuse, FallbackRefuse)))
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer udp.Close()
	tr := &quic.Transport{Conn: udp}
	defer tr.Close()
	ln, err := tr.ListenEarly(http3.ConfigureTLSConfig(sel.QUICConfig()), &quic.Config{})
	require.NoError(t, err)
	srv := &http3.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto+" "+r.TLS.ServerName)
	})}
	served := make(chan error, 1)
	go func() { served <- srv.ServeListener(ln) }()
	defer func() {
		srv.Close()
		<-served
	}()

	rt := &http3.Transport{TLSClientConfig: clientConfig(f.ca.pool, "")}
	defer rt.Close()
	client := &http.Client{Transport: rt, Timeout: ioTimeout}
	port := udp.LocalAddr().(*net.UDPAddr).Port
	req, err := http.NewRequestWithContext(context.Background(), "GET", "https://h3.test:"+strconv.Itoa(port)+"/", nil)
	require.NoError(t, err)
	// h3.test resolves to the server: the client dials the loopback
	// address with the URL's name as SNI.
	rt.Dial = func(ctx context.Context, _ string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error) {
		return quic.DialAddr(ctx, udp.LocalAddr().String(), tlsCfg, cfg)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "HTTP/3.0 h3.test", string(body))
	assert.True(t, resp.TLS.PeerCertificates[0].Equal(f.h3.Leaf))

	req.URL.Host = "h3b.test:" + strconv.Itoa(port)
	_, err = client.Do(req)
	requireUnrecognizedName(t, err)
}
