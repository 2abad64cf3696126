package proxyproto

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
)

// Command is the v2 command. A v1 "UNKNOWN" line is reported as [Local]:
// both mean "use the real connection endpoints".
type Command uint8

// Commands.
const (
	// Local: the connection was opened by the proxy itself (health checks);
	// the header carries no addresses to use.
	Local Command = 0x0
	// Proxy: the connection was relayed for a client whose addresses the
	// header carries.
	Proxy Command = 0x1
)

// String returns "LOCAL" or "PROXY".
func (c Command) String() string {
	switch c {
	case Local:
		return "LOCAL"
	case Proxy:
		return "PROXY"
	}
	return "Command(" + strconv.Itoa(int(c)) + ")"
}

// Protocol is the address family and transport of a header, with the values
// of the v2 family byte. v1 headers use [TCP4], [TCP6] and [Unspec].
type Protocol uint8

// Protocols. These are the only values a header may carry.
const (
	Unspec       Protocol = 0x00
	TCP4         Protocol = 0x11
	UDP4         Protocol = 0x12
	TCP6         Protocol = 0x21
	UDP6         Protocol = 0x22
	UnixStream   Protocol = 0x31
	UnixDatagram Protocol = 0x32
)

// String returns the protocol's name, such as "TCP4" or "UNIX-STREAM".
func (p Protocol) String() string {
	switch p {
	case Unspec:
		return "UNSPEC"
	case TCP4:
		return "TCP4"
	case UDP4:
		return "UDP4"
	case TCP6:
		return "TCP6"
	case UDP6:
		return "UDP6"
	case UnixStream:
		return "UNIX-STREAM"
	case UnixDatagram:
		return "UNIX-DGRAM"
	}
	return fmt.Sprintf("Protocol(%#02x)", uint8(p))
}

// IsIP reports whether p carries IP addresses and ports.
func (p Protocol) IsIP() bool { return p&0xF0 == 0x10 || p&0xF0 == 0x20 }

// IsUnix reports whether p carries UNIX socket paths.
func (p Protocol) IsUnix() bool { return p&0xF0 == 0x30 }

// IsDatagram reports whether p's transport is a datagram one.
func (p Protocol) IsDatagram() bool { return p != Unspec && p&0x0F == 0x02 }

// valid reports whether p is one of the defined combinations.
func (p Protocol) valid() bool {
	switch p {
	case Unspec, TCP4, UDP4, TCP6, UDP6, UnixStream, UnixDatagram:
		return true
	}
	return false
}

// blockLen returns the size of p's v2 address block.
func (p Protocol) blockLen() int {
	switch p & 0xF0 {
	case 0x10:
		return 12
	case 0x20:
		return 36
	case 0x30:
		return 2 * unixPathLen
	}
	return 0
}

const unixPathLen = 108

// Header is a parsed PROXY protocol header.
//
// For a [Proxy] command with an IP protocol, Source and Destination hold the
// client's and the proxy's addresses as sent: an IPv4-mapped IPv6 address in
// a TCP6 line or block stays an IPv6 address here, so that encoding gives
// back what was parsed. [Conn.RemoteAddr], [Conn.LocalAddr] and the
// [Listener]'s trusted-source check unmap them. For [Local] (and v1
// UNKNOWN), Protocol is [Unspec] and no address is reported: the real
// connection endpoints apply.
//
// A Header returned by [Parse] refers to the parsed input for its TLVs and
// UNIX paths; it stays valid as long as that input is not modified. The
// zero Header is not a valid header.
type Header struct {
	// Version is 1 or 2.
	Version uint8
	Command Command
	// Protocol is Unspec for Local.
	Protocol Protocol
	// Source and Destination are set for IP protocols with the Proxy
	// command, and are the zero AddrPort otherwise.
	Source, Destination netip.AddrPort

	unix []byte // v2 UNIX address block (216 bytes), or nil
	tlvs []byte // v2 TLV bytes after the address block
}

// UnixPaths returns the source and destination paths of a UNIX protocol
// header, with trailing NUL padding removed. A Linux abstract socket name
// keeps its leading NUL byte. Both are nil for other protocols. The slices
// alias the header's storage.
func (h Header) UnixPaths() (src, dst []byte) {
	if len(h.unix) != 2*unixPathLen {
		return nil, nil
	}
	return trimNUL(h.unix[:unixPathLen]), trimNUL(h.unix[unixPathLen:])
}

// SetUnixPaths sets the UNIX paths for encoding. Each path is at most 108
// bytes; a leading NUL names a Linux abstract socket. It reports whether
// both paths fit.
func (h *Header) SetUnixPaths(src, dst []byte) bool {
	if len(src) > unixPathLen || len(dst) > unixPathLen {
		return false
	}
	b := make([]byte, 2*unixPathLen)
	copy(b, src)
	copy(b[unixPathLen:], dst)
	h.unix = b
	return true
}

// SetTLVs sets the raw TLV bytes to encode after the address block, as
// built with [AppendTLV]. The slice is kept, not copied.
func (h *Header) SetTLVs(raw []byte) { h.tlvs = raw }

// RawTLVs returns the TLV bytes of a v2 header (nil if none), aliasing the
// parsed input. Parse has already checked their framing.
func (h Header) RawTLVs() []byte { return h.tlvs }

// TLVs returns an iterator over the header's top-level TLVs in wire order,
// NOOP included. It does not allocate.
func (h Header) TLVs() TLVIter { return TLVIter{rest: h.tlvs} }

// FindTLV returns the value of the first TLV of type t.
func (h Header) FindTLV(t TLVType) ([]byte, bool) { return findTLV(h.tlvs, t) }

func trimNUL(b []byte) []byte {
	i := len(b)
	for i > 0 && b[i-1] == 0 {
		i--
	}
	return b[:i]
}

// unixName renders a path the way package net does: an abstract name's
// leading NUL becomes '@'.
func unixName(p []byte) string {
	if len(p) > 0 && p[0] == 0 {
		return "@" + string(bytes.TrimRight(p[1:], "\x00"))
	}
	return string(p)
}
