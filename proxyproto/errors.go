package proxyproto

import (
	"errors"
	"fmt"
)

// Errors callers branch on. Parse and ReadConn return them directly or
// wrapped; test with [errors.Is].
var (
	// ErrNoProxyHeader means the input does not begin with a PROXY protocol
	// signature. It is decided from the first byte that cannot continue
	// either signature, so "GET /" is refused after one byte.
	ErrNoProxyHeader = errors.New("proxyproto: no PROXY protocol header")

	// ErrIncomplete means the input is a proper prefix of a header that may
	// still be valid: more bytes are needed. It never means "malformed".
	ErrIncomplete = errors.New("proxyproto: incomplete PROXY protocol header")

	// ErrInvalidHeader is matched by every [*ParseError]: the input begins
	// with a signature but is not a valid header.
	ErrInvalidHeader = errors.New("proxyproto: invalid PROXY protocol header")

	// ErrHeaderTooLarge means a v2 header announces more bytes than the
	// configured limit. The header may be valid; the limit is a resource
	// decision of the receiver.
	ErrHeaderTooLarge = errors.New("proxyproto: PROXY protocol header larger than the configured limit")

	// ErrHeaderTimeout means the header did not arrive before its deadline.
	ErrHeaderTimeout = errors.New("proxyproto: PROXY protocol header not received before the deadline")

	// ErrCannotEncode is matched by the errors of [Header.AppendTo].
	ErrCannotEncode = errors.New("proxyproto: cannot encode header")
)

// Reason says why a header is invalid. The zero Reason is not used.
type Reason uint8

// Reasons reported in [ParseError].
const (
	// ReasonV1Syntax: wrong separators, a missing, empty or extra field, or
	// "PROXY" not followed by a single space.
	ReasonV1Syntax Reason = iota + 1
	// ReasonV1TooLong: no CRLF within the first 107 bytes.
	ReasonV1TooLong
	// ReasonV1LineEnd: the line ends with a bare LF.
	ReasonV1LineEnd
	// ReasonV1Protocol: the protocol is not TCP4, TCP6 or UNKNOWN.
	ReasonV1Protocol
	// ReasonV1Address: an address is not a valid literal (heading zeroes,
	// zones, brackets, wrong group count and so on).
	ReasonV1Address
	// ReasonV1AddressFamily: an IPv6 literal in a TCP4 line or an IPv4
	// literal in a TCP6 line.
	ReasonV1AddressFamily
	// ReasonV1Port: a port that is empty, signed, has a heading zero or
	// exceeds 65535.
	ReasonV1Port
	// ReasonV2Version: the version nibble is not 2.
	ReasonV2Version
	// ReasonV2Command: the command nibble is neither LOCAL nor PROXY.
	ReasonV2Command
	// ReasonV2Protocol: the family and transport byte is not one of the
	// seven defined combinations (checked for LOCAL too).
	ReasonV2Protocol
	// ReasonV2UnspecProxy: a PROXY command with the UNSPEC family; the
	// receiver may accept or reject it, and this package rejects it.
	ReasonV2UnspecProxy
	// ReasonV2Length: the length is shorter than the family's address block.
	ReasonV2Length
	// ReasonTLVTruncated: a TLV runs past the end of the header, or 1 or 2
	// bytes are left that cannot hold a TLV.
	ReasonTLVTruncated
	// ReasonCRC32CLength: a CRC32C TLV whose value is not 4 bytes.
	ReasonCRC32CLength
	// ReasonCRC32CMismatch: the CRC32C TLV does not match the header.
	ReasonCRC32CMismatch
	// ReasonUniqueIDTooLong: a UNIQUE_ID TLV longer than 128 bytes.
	ReasonUniqueIDTooLong
	// ReasonSSLMalformed: an SSL TLV shorter than 5 bytes or whose sub-TLVs
	// run past its end.
	ReasonSSLMalformed

	reasonCount
)

var reasonText = [reasonCount]string{
	ReasonV1Syntax:        "v1: malformed line",
	ReasonV1TooLong:       "v1: no CRLF within 107 bytes",
	ReasonV1LineEnd:       "v1: line not terminated by CRLF",
	ReasonV1Protocol:      "v1: protocol is not TCP4, TCP6 or UNKNOWN",
	ReasonV1Address:       "v1: malformed address",
	ReasonV1AddressFamily: "v1: address family does not match the protocol",
	ReasonV1Port:          "v1: malformed port",
	ReasonV2Version:       "v2: unsupported version",
	ReasonV2Command:       "v2: unsupported command",
	ReasonV2Protocol:      "v2: undefined address family or transport",
	ReasonV2UnspecProxy:   "v2: PROXY command with UNSPEC family",
	ReasonV2Length:        "v2: length shorter than the address block",
	ReasonTLVTruncated:    "v2: TLV runs past the end of the header",
	ReasonCRC32CLength:    "v2: CRC32C TLV value is not 4 bytes",
	ReasonCRC32CMismatch:  "v2: CRC32C mismatch",
	ReasonUniqueIDTooLong: "v2: UNIQUE_ID TLV longer than 128 bytes",
	ReasonSSLMalformed:    "v2: malformed SSL TLV",
}

// String returns a short description of r.
func (r Reason) String() string {
	if r == 0 || r >= reasonCount {
		return fmt.Sprintf("Reason(%d)", uint8(r))
	}
	return reasonText[r]
}

// ParseError reports an invalid header. It matches [ErrInvalidHeader] with
// [errors.Is]. The values returned by this package are shared and must not
// be modified; obtain one with [errors.As] and read Reason.
type ParseError struct {
	Reason Reason
}

func (e *ParseError) Error() string { return "proxyproto: invalid header: " + e.Reason.String() }

// Unwrap returns [ErrInvalidHeader].
func (e *ParseError) Unwrap() error { return ErrInvalidHeader }

// parseErrors holds one immutable error per reason, so that rejecting a
// header allocates nothing.
var parseErrors = func() (a [reasonCount]ParseError) {
	for i := range a {
		a[i].Reason = Reason(i)
	}
	return a
}()

func (r Reason) err() error { return &parseErrors[r] }
