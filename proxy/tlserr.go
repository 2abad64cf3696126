package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

type tlsRecordHeaderError = tls.RecordHeaderError

// isTLSError reports whether err comes from a TLS handshake: an alert, a
// certificate that failed verification, or a pin mismatch.
func isTLSError(err error) bool {
	var alert tls.AlertError
	var verr *tls.CertificateVerificationError
	var unk x509.UnknownAuthorityError
	var host x509.HostnameError
	var inv x509.CertificateInvalidError
	return errors.As(err, &alert) || errors.As(err, &verr) || errors.As(err, &unk) ||
		errors.As(err, &host) || errors.As(err, &inv) || errors.Is(err, ErrPinMismatch)
}
