package proxyproto

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

var (
	errEncodeVersion  = fmt.Errorf("%w: version must be 1 or 2", ErrCannotEncode)
	errEncodeCommand  = fmt.Errorf("%w: command must be LOCAL or PROXY", ErrCannotEncode)
	errEncodeProtocol = fmt.Errorf("%w: protocol cannot be carried by this version and command", ErrCannotEncode)
	errEncodeAddress  = fmt.Errorf("%w: addresses do not match the protocol, or have a zone", ErrCannotEncode)
	errEncodeUnix     = fmt.Errorf("%w: UNIX paths not set", ErrCannotEncode)
	errEncodeLength   = fmt.Errorf("%w: header longer than 65551 bytes", ErrCannotEncode)
	errEncodeTLVs     = fmt.Errorf("%w: TLVs are malformed", ErrCannotEncode)
	errEncodeV1TLVs   = fmt.Errorf("%w: version 1 carries no TLVs", ErrCannotEncode)
)

// AppendTo appends the wire form of h to dst and returns the extended
// slice. It does not allocate when dst has room.
//
// Version 1 carries TCP4, TCP6 and, for [Local], "PROXY UNKNOWN", and no
// TLVs. Version 2 carries every protocol; a Local header is written with
// the UNSPEC family and no address block, followed by the TLVs. Addresses
// must be of the protocol's family and have no zone, which the wire cannot
// carry: apart from the protocol and addresses of a Local header, nothing
// set on h is dropped silently. A [TypeCRC32C] TLV set with [Header.SetTLVs]
// gets the header's checksum written into it. The result always parses
// back with [Parse]: TLVs that Parse would refuse make AppendTo fail. On
// error dst is returned unchanged, with an error matching [ErrCannotEncode].
func (h Header) AppendTo(dst []byte) ([]byte, error) {
	switch h.Version {
	case 1:
		return h.appendV1(dst)
	case 2:
		return h.appendV2(dst)
	}
	return dst, errEncodeVersion
}

func (h Header) appendV1(dst []byte) ([]byte, error) {
	if len(h.tlvs) > 0 {
		return dst, errEncodeV1TLVs
	}
	switch h.Command {
	case Local:
		return append(dst, "PROXY UNKNOWN\r\n"...), nil
	case Proxy:
	default:
		return dst, errEncodeCommand
	}
	s, d := h.Source.Addr(), h.Destination.Addr()
	switch h.Protocol {
	case TCP4:
		if !s.Is4() || !d.Is4() {
			return dst, errEncodeAddress
		}
		dst = append(dst, "PROXY TCP4 "...)
	case TCP6:
		if !s.Is6() || !d.Is6() || s.Zone() != "" || d.Zone() != "" {
			return dst, errEncodeAddress
		}
		dst = append(dst, "PROXY TCP6 "...)
	default:
		return dst, errEncodeProtocol
	}
	dst = s.AppendTo(dst)
	dst = append(dst, ' ')
	dst = d.AppendTo(dst)
	dst = append(dst, ' ')
	dst = strconv.AppendUint(dst, uint64(h.Source.Port()), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendUint(dst, uint64(h.Destination.Port()), 10)
	return append(dst, '\r', '\n'), nil
}

func (h Header) appendV2(dst []byte) ([]byte, error) {
	start := len(dst)
	proto := h.Protocol
	switch h.Command {
	case Local:
		proto = Unspec
	case Proxy:
		if !proto.valid() || proto == Unspec {
			return dst, errEncodeProtocol
		}
	default:
		return dst, errEncodeCommand
	}
	block := proto.blockLen()
	length := block + len(h.tlvs)
	if length > 0xFFFF {
		return dst, errEncodeLength
	}
	dst = append(dst, v2Sig...)
	dst = append(dst, 0x20|byte(h.Command), byte(proto), byte(length>>8), byte(length))
	s, d := h.Source.Addr(), h.Destination.Addr()
	switch proto & 0xF0 {
	case 0x10:
		if !s.Is4() || !d.Is4() {
			return dst[:start], errEncodeAddress
		}
		s4, d4 := s.As4(), d.As4()
		dst = append(dst, s4[:]...)
		dst = append(dst, d4[:]...)
		dst = binary.BigEndian.AppendUint16(dst, h.Source.Port())
		dst = binary.BigEndian.AppendUint16(dst, h.Destination.Port())
	case 0x20:
		if !s.Is6() || !d.Is6() || s.Zone() != "" || d.Zone() != "" {
			return dst[:start], errEncodeAddress
		}
		s16, d16 := s.As16(), d.As16()
		dst = append(dst, s16[:]...)
		dst = append(dst, d16[:]...)
		dst = binary.BigEndian.AppendUint16(dst, h.Source.Port())
		dst = binary.BigEndian.AppendUint16(dst, h.Destination.Port())
	case 0x30:
		if len(h.unix) != 2*unixPathLen {
			return dst[:start], errEncodeUnix
		}
		dst = append(dst, h.unix...)
	}
	tlvStart := len(dst) - start
	dst = append(dst, h.tlvs...)
	hdr := dst[start:]
	// Fill the first CRC32C record, then check the chain as Parse will.
	it := TLVIter{rest: hdr[tlvStart:]}
	for off := tlvStart; ; {
		t, ok := it.Next()
		if !ok {
			break
		}
		if t.Type == TypeCRC32C && len(t.Value) == 4 {
			binary.BigEndian.PutUint32(hdr[off+3:], headerCRC(hdr, off+3))
			break
		}
		off += 3 + len(t.Value)
	}
	if checkTLVs(hdr, tlvStart) != 0 {
		return dst[:start], errEncodeTLVs
	}
	return dst, nil
}
