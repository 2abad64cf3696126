package proxyproto

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"net/netip"
)

const (
	// maxV1Len is the longest v1 line, CRLF included.
	maxV1Len = 107
	// v2FixedLen is the size of the v2 signature, version, family and
	// length fields.
	v2FixedLen = 16
	// MaxV2Len is the longest possible v2 header: the fixed part and a
	// 65535-byte length.
	MaxV2Len = v2FixedLen + 0xFFFF
)

const (
	v1Sig = "PROXY "
	v2Sig = "\r\n\r\n\x00\r\nQUIT\n"
	// v2Sig0 and v2Sig1 are v2Sig's first 8 and last 4 bytes read as
	// little-endian numbers.
	v2Sig0 = 0x510A0D00_0A0D0A0D
	v2Sig1 = 0x0A544955
)

// Parse parses the PROXY protocol header at the start of b. It returns the
// header and the number of bytes it occupies; the bytes after it belong to
// the application. It does not allocate.
//
// The errors are:
//   - [ErrNoProxyHeader] when b cannot begin either signature, decided at
//     the first byte that rules both out;
//   - [ErrIncomplete] when b is a proper prefix of a header that may still
//     be valid (read more and call Parse again);
//   - a [*ParseError] (matching [ErrInvalidHeader]) with the [Reason] when
//     the header is malformed. Malformation in the fixed part of a v2
//     header is reported before the rest has arrived.
//
// A decision is final: once a prefix of the input gives a header or an
// error other than ErrIncomplete, every longer input gives the same, so a
// reader may call Parse as bytes arrive and gets the same answer however
// they are split.
//
// TLVs are checked while parsing: their framing, the CRC32C if present, the
// UNIQUE_ID length and the SSL TLV's structure. Other TLVs are not
// interpreted; iterate them with [Header.TLVs].
func Parse(b []byte) (Header, int, error) {
	var h Header
	n, err := parse(&h, b)
	if err != nil {
		return Header{}, 0, err
	}
	return h, n, nil
}

func parse(h *Header, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, ErrIncomplete
	}
	switch b[0] {
	case v1Sig[0]:
		if n, ok := parseV1Valid(h, b); ok {
			return n, nil
		}
		return parseV1(h, b)
	case v2Sig[0]:
		return parseV2(h, b)
	}
	return 0, ErrNoProxyHeader
}

// wantLen returns the length of the header that b begins, when it is known
// from b alone (a v2 header whose fixed part has arrived), or 0.
func wantLen(b []byte) int {
	if len(b) < v2FixedLen || string(b[:len(v2Sig)]) != v2Sig {
		return 0
	}
	return v2FixedLen + int(binary.BigEndian.Uint16(b[14:16]))
}

func parseV1(h *Header, b []byte) (int, error) {
	// The signature: "PROXY" decides the version; the space is syntax.
	n := min(len(b), len(v1Sig))
	if string(b[:n]) != v1Sig[:n] {
		if n == len(v1Sig) && string(b[:5]) == v1Sig[:5] {
			return 0, ReasonV1Syntax.err()
		}
		return 0, ErrNoProxyHeader
	}
	if n < len(v1Sig) {
		return 0, ErrIncomplete
	}
	end := bytes.IndexByte(b[:min(len(b), maxV1Len)], '\n')
	if end < 0 || b[end-1] != '\r' {
		// No CRLF yet, or a bare LF. The protocol is decided first, from
		// the bytes that have arrived, so that an impossible one is
		// refused without waiting for the line end and with the same
		// reason however the line is split. (A CRLF line gets the same
		// answers from the checks below.)
		head := b[len(v1Sig):]
		if end >= 0 {
			head = b[len(v1Sig):end]
		}
		switch {
		case !v1ProtocolPrefix(head) && !v1NoFields(head):
			return 0, ReasonV1Protocol.err()
		case end >= 0:
			return 0, ReasonV1LineEnd.err()
		case len(b) >= maxV1Len:
			return 0, ReasonV1TooLong.err()
		}
		return 0, ErrIncomplete
	}
	line := b[len(v1Sig) : end-1]

	if len(line) >= 7 && string(line[:7]) == "UNKNOWN" {
		// Anything may follow UNKNOWN up to the CRLF, and is ignored.
		if len(line) > 7 && line[7] != ' ' {
			return 0, ReasonV1Protocol.err()
		}
		h.Version = 1
		h.Command = Local
		h.Protocol = Unspec
		return end + 1, nil
	}
	if len(line) < 4 || string(line[:3]) != "TCP" || (line[3] != '4' && line[3] != '6') {
		return 0, ReasonV1Protocol.err()
	}
	if len(line) == 4 {
		return 0, ReasonV1Syntax.err()
	}
	if line[4] != ' ' {
		return 0, ReasonV1Protocol.err()
	}
	v6 := line[3] == '6'
	// Four fields separated by single spaces.
	rest := line[5:]
	src, rest, err := v1Addr(rest, v6)
	if err != nil {
		return 0, err
	}
	dst, rest, err := v1Addr(rest, v6)
	if err != nil {
		return 0, err
	}
	sp, rest, err := v1Port(rest, false)
	if err != nil {
		return 0, err
	}
	dp, _, err := v1Port(rest, true)
	if err != nil {
		return 0, err
	}
	h.setV1(v6, src, dst, sp, dp)
	return end + 1, nil
}

// parseV1Valid parses a complete, valid TCP4 or TCP6 line in one pass,
// fields first and the CRLF after them, and reports false for anything
// else, which parseV1 then reads step by step to tell what is wrong. The
// fields hold no LF, so the line it takes is the one parseV1 finds.
func parseV1Valid(h *Header, b []byte) (int, bool) {
	if len(b) < 12 || binary.LittleEndian.Uint64(b) != v1Word0 {
		return 0, false
	}
	var v6 bool
	switch binary.LittleEndian.Uint32(b[8:]) & 0xFFFFFF {
	case v1TCP4:
	case v1TCP6:
		v6 = true
	default:
		return 0, false
	}
	// The addresses, each followed by a space (scanIPv6 stops only at
	// one, or at the end of b).
	i := 11
	var src, dst netip.Addr
	if v6 {
		a, n, ok := scanIPv6(b[i:])
		if i += n; !ok || i >= len(b) {
			return 0, false
		}
		src = a
		a, n, ok = scanIPv6(b[i+1:])
		if i += n + 1; !ok || i >= len(b) {
			return 0, false
		}
		dst = a
	} else {
		a, n, ok := scanIPv4(b[i:])
		if i += n; !ok || i >= len(b) || b[i] != ' ' {
			return 0, false
		}
		d, n, ok := scanIPv4(b[i+1:])
		if i += n + 1; !ok || i >= len(b) || b[i] != ' ' {
			return 0, false
		}
		src, dst = netip.AddrFrom4(a), netip.AddrFrom4(d)
	}
	i++
	// The ports, the first followed by a space, the second by the CRLF,
	// each read with the bytes after it from the 8 bytes at its start as
	// one number (with '0' subtracted from each byte; the NULs past the
	// end of b match neither).
	x := load64(b, i) ^ 0x30303030_30303030
	k := decimalLen(x)
	sp := decimal(x, k)
	if k-1 > 4 || k > 1 && x&0xFF == 0 || sp > 0xFFFF || byte(x>>(8*k&63)) != ' '^0x30 {
		return 0, false
	}
	i += int(k) + 1
	x = load64(b, i) ^ 0x30303030_30303030
	k = decimalLen(x)
	dp := decimal(x, k)
	if k-1 > 4 || k > 1 && x&0xFF == 0 || dp > 0xFFFF || uint16(x>>(8*k&63)) != crlf^0x3030 {
		return 0, false
	}
	if i += int(k) + 2; i > maxV1Len {
		return 0, false
	}
	h.setV1(v6, src, dst, uint16(sp), uint16(dp))
	return i, true
}

// v1Word0, v1TCP4 and v1TCP6 are "PROXY TC", "P4 " and "P6 " read as
// little-endian numbers: the first 8 bytes of a TCP4 or TCP6 line and the
// 3 after them. crlf is "\r\n" read the same way.
const (
	v1Word0 = 0x43_54_20_59_58_4F_52_50
	v1TCP4  = 0x20_34_50
	v1TCP6  = 0x20_36_50
	crlf    = 0x0A_0D
)

// setV1 fills h from the fields of a TCP4 or TCP6 line.
func (h *Header) setV1(v6 bool, src, dst netip.Addr, sp, dp uint16) {
	h.Version = 1
	h.Command = Proxy
	h.Protocol = TCP4
	if v6 {
		h.Protocol = TCP6
	}
	h.Source = netip.AddrPortFrom(src, sp)
	h.Destination = netip.AddrPortFrom(dst, dp)
}

// v1ValidAddr parses a valid address at the start of s and the single
// space after it, and returns the bytes after the space.
func v1ValidAddr(s []byte, v6 bool) (netip.Addr, []byte, bool) {
	if !v6 {
		if ip, n, ok := scanIPv4(s); ok && n < len(s) && s[n] == ' ' {
			return netip.AddrFrom4(ip), s[n+1:], true
		}
	} else if a, n, ok := scanIPv6(s); ok && n < len(s) && s[n] == ' ' {
		return a, s[n+1:], true
	}
	return netip.Addr{}, nil, false
}

// load64 returns the 8 bytes of b from i as a little-endian number,
// padded with NULs past the end of b.
func load64(b []byte, i int) uint64 {
	if i+8 <= len(b) {
		return binary.LittleEndian.Uint64(b[i : i+8])
	}
	var w uint64
	for k := len(b) - 1; k >= i; k-- {
		w = w<<8 | uint64(b[k])
	}
	return w
}

// scanPort reads the decimal port at the start of s: at most 5 digits
// without a heading zero, at most 65535, followed by a byte that is not a
// digit or by the end of s. It returns 0 bytes read when there is none.
func scanPort(s []byte) (uint16, int) {
	x := load64(s, 0) ^ 0x30303030_30303030
	k := decimalLen(x)
	if k-1 > 4 || k > 1 && x&0xFF == 0 {
		return 0, 0
	}
	if v := decimal(x, k); v <= 0xFFFF {
		return uint16(v), int(k)
	}
	return 0, 0
}

// decimalLen and decimal read the decimal number at the start of x, 8
// bytes read as a little-endian number with '0' subtracted from each
// (xored with 0x30), so that digits are the bytes 0-9: decimalLen returns
// the number of digits before the first other byte, and decimal the value
// of the first k of them, 1 <= k <= 8.
func decimalLen(x uint64) uint {
	// A byte that is 10 or more has its top bit set in nd.
	nd := ((x & 0x7F7F7F7F_7F7F7F7F) + 0x76767676_76767676 | x) & 0x80808080_80808080
	return uint(bits.TrailingZeros64(nd)) >> 3
}

func decimal(x uint64, k uint) uint64 {
	// The digits moved to the top, behind zeros (the first digit is the
	// lowest byte), then combined in pairs, fours and eights.
	x <<= (64 - 8*k) & 63
	x = (x*10 + x>>8) & 0x00FF00FF_00FF00FF
	x = (x*100 + x>>16) & 0x0000FFFF_0000FFFF
	return (x*10000 + x>>32) & 0xFFFFFFFF
}

// v1ProtocolPrefix reports whether b, the start of the line after
// "PROXY " (up to its LF, if that has arrived), can still begin a valid
// protocol token.
func v1ProtocolPrefix(b []byte) bool {
	for _, p := range [...]string{"TCP4 ", "TCP6 ", "UNKNOWN"} {
		n := min(len(b), len(p))
		if string(b[:n]) == p[:n] {
			if p == "UNKNOWN" && len(b) > n && b[n] != ' ' && b[n] != '\r' {
				return false
			}
			return true
		}
	}
	return false
}

// v1NoFields reports whether b is "TCP4" or "TCP6" and a CR: a line
// without fields if the LF follows, refused as such when it does.
func v1NoFields(b []byte) bool {
	return len(b) == 5 && string(b[:3]) == "TCP" && (b[3] == '4' || b[3] == '6') && b[4] == '\r'
}

// v1Addr parses the address at the start of s, which a single space
// must follow, and returns the bytes after the space.
func v1Addr(s []byte, v6 bool) (netip.Addr, []byte, error) {
	if a, rest, ok := v1ValidAddr(s, v6); ok {
		return a, rest, nil
	}
	end := bytes.IndexByte(s, ' ')
	if end <= 0 {
		return netip.Addr{}, nil, ReasonV1Syntax.err()
	}
	a, err := parseV1Addr(s[:end], v6)
	return a, s[end+1:], err
}

// v1Port parses the port at the start of s. Unless it is the last field, a
// single space must follow it, and the bytes after the space are returned.
func v1Port(s []byte, last bool) (uint16, []byte, error) {
	if v, n := scanPort(s); n > 0 {
		if last && n == len(s) {
			return v, nil, nil
		}
		if !last && n < len(s) && s[n] == ' ' {
			return v, s[n+1:], nil
		}
	}
	end := bytes.IndexByte(s, ' ')
	if last {
		if end >= 0 {
			return 0, nil, ReasonV1Syntax.err()
		}
		end = len(s)
	}
	if end <= 0 {
		return 0, nil, ReasonV1Syntax.err()
	}
	p, ok := parsePort(s[:end])
	if !ok {
		return 0, nil, ReasonV1Port.err()
	}
	if last {
		return p, nil, nil
	}
	return p, s[end+1:], nil
}

func parseV1Addr(s []byte, v6 bool) (netip.Addr, error) {
	if v6 {
		if a, ok := parseIPv6(s); ok {
			return a, nil
		}
		if _, ok := parseIPv4(s); ok {
			return netip.Addr{}, ReasonV1AddressFamily.err()
		}
		return netip.Addr{}, ReasonV1Address.err()
	}
	if a, ok := parseIPv4(s); ok {
		return a, nil
	}
	if _, ok := parseIPv6(s); ok {
		return netip.Addr{}, ReasonV1AddressFamily.err()
	}
	return netip.Addr{}, ReasonV1Address.err()
}

func parseV2(h *Header, b []byte) (int, error) {
	if len(b) <= 12 || binary.LittleEndian.Uint64(b) != v2Sig0 || binary.LittleEndian.Uint32(b[8:]) != v2Sig1 {
		// A prefix, or not the signature: compared byte by byte.
		n := min(len(b), len(v2Sig))
		if string(b[:n]) != v2Sig[:n] {
			return 0, ErrNoProxyHeader
		}
		return 0, ErrIncomplete
	}
	if b[12]>>4 != 2 {
		return 0, ReasonV2Version.err()
	}
	cmd := Command(b[12] & 0x0F)
	if cmd != Local && cmd != Proxy {
		return 0, ReasonV2Command.err()
	}
	if len(b) <= 13 {
		return 0, ErrIncomplete
	}
	proto := Protocol(b[13])
	if !proto.valid() {
		return 0, ReasonV2Protocol.err()
	}
	if cmd == Proxy && proto == Unspec {
		return 0, ReasonV2UnspecProxy.err()
	}
	if len(b) < v2FixedLen {
		return 0, ErrIncomplete
	}
	length := int(binary.BigEndian.Uint16(b[14:16]))
	block := proto.blockLen()
	if cmd == Proxy && length < block {
		return 0, ReasonV2Length.err()
	}
	total := v2FixedLen + length
	if len(b) < total {
		return 0, ErrIncomplete
	}
	hdr := b[:total:total]
	// A LOCAL block that does not fit its family is skipped whole.
	tlvStart := v2FixedLen + block
	if length < block {
		tlvStart = total
	}
	var tlvs []byte
	if tlvStart < total {
		if r := checkTLVs(hdr, tlvStart); r != 0 {
			return 0, r.err()
		}
		tlvs = hdr[tlvStart:]
	}
	h.Version = 2
	h.Command = cmd
	h.tlvs = tlvs
	if cmd == Local {
		h.Protocol = Unspec
		return total, nil
	}
	h.Protocol = proto
	a := hdr[v2FixedLen:]
	switch proto & 0xF0 {
	case 0x10:
		h.Source = netip.AddrPortFrom(netip.AddrFrom4([4]byte(a[0:4])), binary.BigEndian.Uint16(a[8:10]))
		h.Destination = netip.AddrPortFrom(netip.AddrFrom4([4]byte(a[4:8])), binary.BigEndian.Uint16(a[10:12]))
	case 0x20:
		h.Source = netip.AddrPortFrom(netip.AddrFrom16([16]byte(a[0:16])), binary.BigEndian.Uint16(a[32:34]))
		h.Destination = netip.AddrPortFrom(netip.AddrFrom16([16]byte(a[16:32])), binary.BigEndian.Uint16(a[34:36]))
	case 0x30:
		h.unix = a[:2*unixPathLen]
	}
	return total, nil
}
