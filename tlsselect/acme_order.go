package tlsselect

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/acme"
)

// order obtains a certificate for names over HTTP-01 (RFC 8555 section
// 7.4 and 8.3): a new order, one challenge per pending authorization
// published in the ChallengeStore and accepted, the order awaited, then
// finalized with a CSR for a new ECDSA P-256 key. The challenges are
// withdrawn when order returns, whatever the outcome.
func (m *ACME) order(ctx context.Context, names []string) (*tls.Certificate, error) {
	if err := m.register(ctx); err != nil {
		return nil, err
	}
	o, err := m.client.AuthorizeOrder(ctx, acme.DomainIDs(names...))
	if err != nil {
		return nil, acmeError("new order", err)
	}
	authzs := o.AuthzURLs
	var tokens []string
	defer func() {
		for _, t := range tokens {
			m.cfg.Challenges.Delete(t)
		}
	}()
	for _, u := range authzs {
		z, err := m.client.GetAuthorization(ctx, u)
		if err != nil {
			return nil, acmeError("authorization", err)
		}
		switch z.Status {
		case acme.StatusValid:
			continue // still valid from an earlier order
		case acme.StatusPending:
		default:
			return nil, fmt.Errorf("acme: the authorization for %s is %s", z.Identifier.Value, z.Status)
		}
		var chal *acme.Challenge
		for _, c := range z.Challenges {
			if c.Type == "http-01" {
				chal = c
				break
			}
		}
		if chal == nil {
			return nil, fmt.Errorf("acme: the CA offers no http-01 challenge for %s", z.Identifier.Value)
		}
		keyAuth, err := m.client.HTTP01ChallengeResponse(chal.Token)
		if err != nil {
			return nil, acmeError("the challenge response", err)
		}
		m.cfg.Challenges.Set(chal.Token, keyAuth)
		tokens = append(tokens, chal.Token)
		if _, err := m.client.Accept(ctx, chal); err != nil {
			return nil, acmeError(fmt.Sprintf("accepting the challenge for %s", z.Identifier.Value), err)
		}
	}
	o, err = m.client.WaitOrder(ctx, o.URI)
	if err != nil {
		return nil, m.explain(ctx, authzs, err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: names[0]},
		DNSNames: names,
	}, key)
	if err != nil {
		return nil, err
	}
	chain, _, err := m.client.CreateOrderCert(ctx, o.FinalizeURL, csr, true)
	if err != nil {
		return nil, acmeError("finalizing the order", err)
	}
	if len(chain) == 0 {
		return nil, errors.New("acme: the CA sent no certificate")
	}
	leaf, err := x509.ParseCertificate(chain[0])
	if err != nil {
		return nil, acmeError("the CA's certificate", err)
	}
	cert := &tls.Certificate{Certificate: chain, PrivateKey: key, Leaf: leaf}
	if !keyMatches(key, leaf) {
		return nil, errors.New("acme: the CA's certificate is not for the key of the request")
	}
	if !coversAll(cert, names) {
		return nil, fmt.Errorf("acme: the CA's certificate does not cover %s", strings.Join(names, ", "))
	}
	return cert, nil
}

// register registers the account once per ACME; a key the CA knows
// already is fine.
func (m *ACME) register(ctx context.Context) error {
	m.regMu.Lock()
	defer m.regMu.Unlock()
	if m.registered {
		return nil
	}
	acct := &acme.Account{}
	if m.cfg.Email != "" {
		acct.Contact = []string{"mailto:" + m.cfg.Email}
	}
	if _, err := m.client.Register(ctx, acct, acme.AcceptTOS); err != nil && !errors.Is(err, acme.ErrAccountAlreadyExists) {
		return acmeError("registering the account", err)
	}
	m.registered = true
	return nil
}

// explain adds to a failed WaitOrder what the CA said about each
// challenge that failed, which is where a validation's reason is.
func (m *ACME) explain(ctx context.Context, authzs []string, err error) error {
	var oe *acme.OrderError
	if !errors.As(err, &oe) {
		return acmeError("waiting for the order", err)
	}
	var why []string
	for _, u := range authzs {
		z, zerr := m.client.GetAuthorization(ctx, u)
		if zerr != nil {
			continue
		}
		for _, c := range z.Challenges {
			if c.Error != nil {
				why = append(why, c.Type+" for "+z.Identifier.Value+": "+c.Error.Error())
			}
		}
	}
	if len(why) == 0 {
		return acmeError("the order failed", err)
	}
	return acmeError("the order failed: "+strings.Join(why, "; "), err)
}

// acmeError is an error of an order's step what, wrapping err (which
// golang.org/x/crypto/acme's errors begin with "acme: " themselves): its
// text says "acme: " once.
func acmeError(what string, err error) error {
	return &wrapped{msg: "acme: " + what + ": " + strings.TrimPrefix(err.Error(), "acme: "), err: err}
}

// wrapped is an error with a message of its own around another.
type wrapped struct {
	msg string
	err error
}

func (e *wrapped) Error() string { return e.msg }
func (e *wrapped) Unwrap() error { return e.err }
