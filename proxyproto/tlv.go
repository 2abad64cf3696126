package proxyproto

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// TLVType is the type of a v2 TLV.
type TLVType uint8

// TLV types from the specification, and the cloud vendors' types in the
// custom range 0xE0-0xEF.
const (
	TypeALPN      TLVType = 0x01 // application protocol, e.g. "h2"
	TypeAuthority TLVType = 0x02 // host name (TLS SNI), UTF-8
	TypeCRC32C    TLVType = 0x03 // CRC32C of the header; verified by Parse
	TypeNoop      TLVType = 0x04 // padding
	TypeUniqueID  TLVType = 0x05 // opaque connection ID, at most 128 bytes
	TypeSSL       TLVType = 0x20 // TLS information; see [TLV.SSL]
	TypeNetNS     TLVType = 0x30 // network namespace name

	TypeGCP   TLVType = 0xE0 // Google Cloud Private Service Connect; see [TLV.GCPConnectionID]
	TypeAWS   TLVType = 0xEA // AWS PrivateLink; see [TLV.AWSVPCEndpointID]
	TypeAzure TLVType = 0xEE // Azure Private Link; see [TLV.AzureLinkID]
)

// Sub-TLV types inside a [TypeSSL] TLV.
const (
	SubtypeSSLVersion    TLVType = 0x21 // TLS version, US-ASCII
	SubtypeSSLCN         TLVType = 0x22 // client certificate subject Common Name
	SubtypeSSLCipher     TLVType = 0x23 // cipher name, e.g. "ECDHE-RSA-AES128-GCM-SHA256"
	SubtypeSSLSigAlg     TLVType = 0x24 // frontend certificate signature algorithm
	SubtypeSSLKeyAlg     TLVType = 0x25 // frontend certificate key algorithm
	SubtypeSSLGroup      TLVType = 0x26 // key exchange group
	SubtypeSSLSigScheme  TLVType = 0x27 // signature scheme
	SubtypeSSLClientCert TLVType = 0x28 // client certificate, DER
)

// Bits of [SSL.Client].
const (
	SSLClientSSL      = 0x01 // the client connected over TLS
	SSLClientCertConn = 0x02 // the client sent a certificate on this connection
	SSLClientCertSess = 0x04 // the client sent a certificate in this TLS session
)

const maxUniqueIDLen = 128

// TLV is one type-length-value record. Value aliases the parsed input.
type TLV struct {
	Type  TLVType
	Value []byte
}

// TLVIter iterates over a chain of TLVs without allocating:
//
//	it := h.TLVs()
//	for t, ok := it.Next(); ok; t, ok = it.Next() {
//		...
//	}
//	if err := it.Err(); err != nil { ... }
//
// Chains from [Parse] are well formed, so Err is nil for them. The zero
// TLVIter is an empty chain.
type TLVIter struct {
	rest []byte
	bad  bool
}

// Next returns the next TLV, or false at the end of the chain or at a
// malformed record.
func (it *TLVIter) Next() (TLV, bool) {
	if len(it.rest) == 0 || it.bad {
		return TLV{}, false
	}
	if len(it.rest) < 3 {
		it.bad = true
		return TLV{}, false
	}
	n := 3 + int(binary.BigEndian.Uint16(it.rest[1:3]))
	if n > len(it.rest) {
		it.bad = true
		return TLV{}, false
	}
	t := TLV{Type: TLVType(it.rest[0]), Value: it.rest[3:n:n]}
	it.rest = it.rest[n:]
	return t, true
}

// Err returns a [*ParseError] with [ReasonTLVTruncated] if Next stopped at
// a malformed record, and nil otherwise.
func (it *TLVIter) Err() error {
	if it.bad {
		return ReasonTLVTruncated.err()
	}
	return nil
}

func findTLV(chain []byte, t TLVType) ([]byte, bool) {
	it := TLVIter{rest: chain}
	for v, ok := it.Next(); ok; v, ok = it.Next() {
		if v.Type == t {
			return v.Value, true
		}
	}
	return nil, false
}

// SSL is the decoded value of a [TypeSSL] TLV. The zero SSL is the one of
// a client without TLS: no flags and no TLVs.
type SSL struct {
	// Client holds the SSLClient* bits.
	Client uint8
	// Verify is 0 if the client presented a certificate that verified.
	Verify uint32
	subs   []byte
}

// SSL decodes a [TypeSSL] TLV. It reports false for other types and for a
// malformed value (which Parse never returns).
func (t TLV) SSL() (SSL, bool) {
	if t.Type != TypeSSL || !validSSL(t.Value) {
		return SSL{}, false
	}
	return SSL{Client: t.Value[0], Verify: binary.BigEndian.Uint32(t.Value[1:5]), subs: t.Value[5:]}, true
}

// TLVs returns an iterator over the SSL sub-TLVs.
func (s SSL) TLVs() TLVIter { return TLVIter{rest: s.subs} }

// Find returns the value of the first sub-TLV of type t.
func (s SSL) Find(t TLVType) ([]byte, bool) { return findTLV(s.subs, t) }

// AWSVPCEndpointID returns the VPC endpoint ID (such as
// "vpce-08d2bf15fac5001c9") of a [TypeAWS] TLV with subtype 0x01. It
// reports false for other TLVs and for IDs with bytes outside
// [A-Za-z0-9-].
func (t TLV) AWSVPCEndpointID() ([]byte, bool) {
	if t.Type != TypeAWS || len(t.Value) < 1 || t.Value[0] != 0x01 {
		return nil, false
	}
	id := t.Value[1:]
	for _, c := range id {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			return nil, false
		}
	}
	return id, true
}

// AzureLinkID returns the private endpoint LINKID of a [TypeAzure] TLV with
// subtype 0x01 (a little-endian uint32).
func (t TLV) AzureLinkID() (uint32, bool) {
	if t.Type != TypeAzure || len(t.Value) != 5 || t.Value[0] != 0x01 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(t.Value[1:]), true
}

// GCPConnectionID returns the Private Service Connect connection ID of a
// [TypeGCP] TLV (a big-endian uint64).
func (t TLV) GCPConnectionID() (uint64, bool) {
	if t.Type != TypeGCP || len(t.Value) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(t.Value), true
}

var errTLVTooLong = errors.New("proxyproto: TLV value longer than 65535 bytes")

// AppendTLV appends a TLV record to dst. It panics if value is longer than
// 65535 bytes. For a [TypeCRC32C] record, pass 4 zero bytes:
// [Header.AppendTo] fills in the checksum.
func AppendTLV(dst []byte, t TLVType, value []byte) []byte {
	if len(value) > 0xFFFF {
		panic(errTLVTooLong)
	}
	dst = append(dst, byte(t), byte(len(value)>>8), byte(len(value)))
	return append(dst, value...)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// zeroCRC stands for the CRC32C field while the checksum is computed. It is
// never written.
var zeroCRC [4]byte

// checkTLVs checks the TLV chain of the complete v2 header hdr, starting at
// offset start, and returns the reason it is invalid or 0.
func checkTLVs(hdr []byte, start int) Reason {
	off := start
	for off < len(hdr) {
		if len(hdr)-off < 3 {
			return ReasonTLVTruncated
		}
		vl := int(binary.BigEndian.Uint16(hdr[off+1 : off+3]))
		end := off + 3 + vl
		if end > len(hdr) {
			return ReasonTLVTruncated
		}
		v := hdr[off+3 : end]
		switch TLVType(hdr[off]) {
		case TypeCRC32C:
			if vl != 4 {
				return ReasonCRC32CLength
			}
			if binary.BigEndian.Uint32(v) != headerCRC(hdr, off+3) {
				return ReasonCRC32CMismatch
			}
		case TypeUniqueID:
			if vl > maxUniqueIDLen {
				return ReasonUniqueIDTooLong
			}
		case TypeSSL:
			if !validSSL(v) {
				return ReasonSSLMalformed
			}
		}
		off = end
	}
	return 0
}

// headerCRC returns the CRC32C of hdr computed with the 4 bytes at at
// taken as zero.
func headerCRC(hdr []byte, at int) uint32 {
	c := crc32.Update(0, castagnoli, hdr[:at])
	c = crc32.Update(c, castagnoli, zeroCRC[:])
	return crc32.Update(c, castagnoli, hdr[at+4:])
}

func validSSL(v []byte) bool {
	if len(v) < 5 {
		return false
	}
	it := TLVIter{rest: v[5:]}
	for _, ok := it.Next(); ok; _, ok = it.Next() {
	}
	return !it.bad
}
