package proxyproto_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/proxyproto"
)

// Wire builders for v2 vectors.

const sig2 = "\r\n\r\n\x00\r\nQUIT\n"

// v2 builds a v2 header whose length field is the size of body.
func v2(verCmd, fam byte, body ...string) string {
	b := strings.Join(body, "")
	return v2len(verCmd, fam, len(b), b)
}

// v2len builds a v2 header with an explicit length field.
func v2len(verCmd, fam byte, length int, body ...string) string {
	return sig2 + string([]byte{verCmd, fam, byte(length >> 8), byte(length)}) + strings.Join(body, "")
}

func tlv(t byte, v string) string {
	return string([]byte{t, byte(len(v) >> 8), byte(len(v))}) + v
}

func u16(v uint16) string { return string(binary.BigEndian.AppendUint16(nil, v)) }

// withCRC fills the 4 bytes at offset at with the CRC32C of hdr.
func withCRC(hdr string, at int) string {
	b := []byte(hdr)
	binary.BigEndian.PutUint32(b[at:], refCRC32C(b, at))
	return string(b)
}

func ip4(a, b, c, d byte) string { return string([]byte{a, b, c, d}) }

var (
	block4 = ip4(192, 0, 2, 1) + ip4(198, 51, 100, 2) + u16(56324) + u16(443)
	v6a    = "\x20\x01\x0d\xb8" + strings.Repeat("\x00", 11) + "\x01" // 2001:db8::1
	v6b    = "\x20\x01\x0d\xb8" + strings.Repeat("\x00", 11) + "\x02" // 2001:db8::2
	block6 = v6a + v6b + u16(1234) + u16(443)
	mapped = strings.Repeat("\x00", 10) + "\xff\xff" + ip4(192, 0, 2, 1)
)

func unixPath(p string) string { return p + strings.Repeat("\x00", 108-len(p)) }

// vector is one conformance case: the input is hdr followed by tail; a
// valid case consumes exactly hdr.
type vector struct {
	name   string
	hdr    string
	tail   string
	err    error             // ErrNoProxyHeader or ErrIncomplete
	reason proxyproto.Reason // for a *ParseError
	want   string            // describe() of the header, for valid cases
}

const get = "GET"

func vectors() []vector {
	long6 := "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
	unknown107 := "PROXY UNKNOWN " + long6 + " " + long6 + " 65535 65535\r\n"
	crcHdr := v2(0x21, 0x11, block4, tlv(0x01, "h2"), tlv(0x03, "\x00\x00\x00\x00"))
	crcAt := 16 + 12 + 5 + 3
	ssl := tlv(0x20, "\x07"+"\x00\x00\x00\x00"+tlv(0x21, "TLSv1.3")+tlv(0x22, "client.example"))
	big611 := v2(0x21, 0x11, block4, tlv(0xE5, strings.Repeat("x", 611-16-12-3)))
	big4131 := v2(0x21, 0x11, block4, tlv(0x28, strings.Repeat("c", 4131-16-12-3)))

	R := func(name, hdr string, r proxyproto.Reason) vector {
		return vector{name: name, hdr: hdr, tail: get, reason: r}
	}
	E := func(name, in string, err error) vector { return vector{name: name, hdr: in, err: err} }
	V := func(name, hdr, want string) vector { return vector{name: name, hdr: hdr, tail: get, want: want} }

	return []vector{
		// Detection.
		E("detect/empty", "", proxyproto.ErrIncomplete),
		E("detect/http", "GET / HTTP/1.1\r\n\r\n", proxyproto.ErrNoProxyHeader),
		E("detect/tls", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", proxyproto.ErrNoProxyHeader),
		E("detect/ping-decided-at-byte-2", "PI", proxyproto.ErrNoProxyHeader),
		E("detect/prox", "PROX", proxyproto.ErrIncomplete),
		E("detect/lowercase-proxy", "proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n", proxyproto.ErrNoProxyHeader),
		E("detect/v2-signature-truncated", sig2[:9], proxyproto.ErrIncomplete),
		E("detect/v2-signature-corrupt", "\r\n\r\n\x00\r\nQUIX\n\x21\x11\x00\x0c"+block4, proxyproto.ErrNoProxyHeader),
		E("detect/crlf-then-http", "\r\n\r\nGET", proxyproto.ErrNoProxyHeader),

		// v1, valid.
		V("v1/tcp4", "PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n", "v1 PROXY TCP4 192.168.0.1:56324 192.168.0.11:443"),
		V("v1/tcp4-extremes", "PROXY TCP4 0.0.0.0 255.255.255.255 0 65535\r\n", "v1 PROXY TCP4 0.0.0.0:0 255.255.255.255:65535"),
		V("v1/tcp4-56-bytes", "PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\n", "v1 PROXY TCP4 255.255.255.255:65535 255.255.255.255:65535"),
		V("v1/tcp6-compressed", "PROXY TCP6 2001:db8::1 2001:db8::2 1234 443\r\n", "v1 PROXY TCP6 [2001:db8::1]:1234 [2001:db8::2]:443"),
		V("v1/tcp6-uncompressed", "PROXY TCP6 2001:0db8:0000:0000:0000:0000:0000:0001 2001:db8:0:0:0:0:0:2 1 2\r\n", "v1 PROXY TCP6 [2001:db8::1]:1 [2001:db8::2]:2"),
		V("v1/tcp6-uppercase", "PROXY TCP6 2001:DB8::A 2001:db8::b 1 2\r\n", "v1 PROXY TCP6 [2001:db8::a]:1 [2001:db8::b]:2"),
		V("v1/tcp6-unspecified-loopback", "PROXY TCP6 :: ::1 1 2\r\n", "v1 PROXY TCP6 [::]:1 [::1]:2"),
		V("v1/tcp6-ellipsis-one-group", "PROXY TCP6 1:2:3:4:5:6::8 1:: 1 2\r\n", "v1 PROXY TCP6 [1:2:3:4:5:6:0:8]:1 [1::]:2"),
		V("v1/tcp6-v4-mapped-hex", "PROXY TCP6 ::ffff:c000:201 ::1 1 2\r\n", "v1 PROXY TCP6 [::ffff:192.0.2.1]:1 [::1]:2"),
		V("v1/tcp6-v4-mapped-dotted", "PROXY TCP6 ::ffff:192.0.2.1 ::ffff:198.51.100.2 1 2\r\n", "v1 PROXY TCP6 [::ffff:192.0.2.1]:1 [::ffff:198.51.100.2]:2"),
		V("v1/tcp6-104-bytes", "PROXY TCP6 "+long6+" "+long6+" 65535 65535\r\n", "v1 PROXY TCP6 [ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535 [ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535"),
		V("v1/unknown-short", "PROXY UNKNOWN\r\n", "v1 LOCAL UNSPEC"),
		V("v1/unknown-with-addresses", "PROXY UNKNOWN 192.0.2.1 198.51.100.2 1 2\r\n", "v1 LOCAL UNSPEC"),
		V("v1/unknown-107-bytes", unknown107, "v1 LOCAL UNSPEC"),
		V("v1/unknown-bare-cr-in-text", "PROXY UNKNOWN a\rb\r\n", "v1 LOCAL UNSPEC"),
		{name: "v1/second-header-left-as-payload", hdr: "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\n", tail: "PROXY TCP4 9.9.9.9 8.8.8.8 3 4\r\n", want: "v1 PROXY TCP4 1.2.3.4:1 5.6.7.8:2"},

		// v1, invalid.
		R("v1/108-bytes", "PROXY UNKNOWN "+long6+" "+long6+" 65535 655355\r\n", proxyproto.ReasonV1TooLong),
		R("v1/no-crlf-in-107", "PROXY UNKNOWN "+strings.Repeat("a", 200)+"\r\n", proxyproto.ReasonV1TooLong),
		R("v1/lf-only", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n", proxyproto.ReasonV1LineEnd),
		R("v1/lf-cr", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n\r", proxyproto.ReasonV1LineEnd),
		E("v1/cr-only-then-eof", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r", proxyproto.ErrIncomplete),
		E("v1/truncated", "PROXY TCP4 1.2.3.4", proxyproto.ErrIncomplete),
		R("v1/unknown-protocol-decided-early", "PROXY GARBAGE", proxyproto.ReasonV1Protocol),
		// The protocol is decided first, so the reason does not depend on
		// how much of the line has arrived.
		R("v1/unknown-protocol-bare-lf", "PROXY 0\n", proxyproto.ReasonV1Protocol),
		R("v1/unknown-protocol-no-crlf-in-107", "PROXY 0"+strings.Repeat("x", 110), proxyproto.ReasonV1Protocol),
		E("v1/tcp4-cr-undecided", "PROXY TCP4\r", proxyproto.ErrIncomplete),
		R("v1/double-space", "PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n", proxyproto.ReasonV1Syntax),
		R("v1/trailing-space", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n", proxyproto.ReasonV1Syntax),
		R("v1/leading-space", "PROXY  TCP4 1.2.3.4 5.6.7.8 1 2\r\n", proxyproto.ReasonV1Protocol),
		R("v1/tab", "PROXY\tTCP4 1.2.3.4 5.6.7.8 1 2\r\n", proxyproto.ReasonV1Syntax),
		R("v1/tab-between-fields", "PROXY TCP4 1.2.3.4\t5.6.7.8 1 2\r\n", proxyproto.ReasonV1Address),
		R("v1/proxy-crlf", "PROXY\r\n", proxyproto.ReasonV1Syntax),
		R("v1/proxy-space-crlf", "PROXY \r\n", proxyproto.ReasonV1Protocol),
		R("v1/no-space-after-proxy", "PROXYTCP4 1.2.3.4 5.6.7.8 1 2\r\n", proxyproto.ReasonV1Syntax),
		R("v1/lowercase-protocol", "PROXY tcp4 1.2.3.4 5.6.7.8 1 2\r\n", proxyproto.ReasonV1Protocol),
		R("v1/tcp5", "PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n", proxyproto.ReasonV1Protocol),
		R("v1/udp4", "PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n", proxyproto.ReasonV1Protocol),
		R("v1/unknownx", "PROXY UNKNOWNX\r\n", proxyproto.ReasonV1Protocol),
		R("v1/tcp4-no-fields", "PROXY TCP4\r\n", proxyproto.ReasonV1Syntax),
		R("v1/missing-port", "PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n", proxyproto.ReasonV1Syntax),
		R("v1/extra-field", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n", proxyproto.ReasonV1Syntax),
		R("v1/ipv4-heading-zeroes", "PROXY TCP4 192.168.000.1 5.6.7.8 1 2\r\n", proxyproto.ReasonV1Address),
		R("v1/ipv4-heading-zero", "PROXY TCP4 192.168.0.01 5.6.7.8 1 2\r\n", proxyproto.ReasonV1Address),
		R("v1/ipv4-256", "PROXY TCP4 1.2.3.4 5.6.7.256 1 2\r\n", proxyproto.ReasonV1Address),
		R("v1/ipv4-3-octets", "PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n", proxyproto.ReasonV1Address),
		R("v1/ipv4-5-octets", "PROXY TCP4 1.2.3.4.5 5.6.7.8 1 2\r\n", proxyproto.ReasonV1Address),
		R("v1/ipv4-empty-octet", "PROXY TCP4 1..3.4 5.6.7.8 1 2\r\n", proxyproto.ReasonV1Address),
		R("v1/ipv4-hex-octet", "PROXY TCP4 0x1.2.3.4 5.6.7.8 1 2\r\n", proxyproto.ReasonV1Address),
		R("v1/ipv4-nul", "PROXY TCP4 1.2.3.4\x00 5.6.7.8 1 2\r\n", proxyproto.ReasonV1Address),
		R("v1/port-65536", "PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n", proxyproto.ReasonV1Port),
		R("v1/port-2^32+1", "PROXY TCP4 1.2.3.4 5.6.7.8 1 4294967297\r\n", proxyproto.ReasonV1Port),
		R("v1/port-heading-zero", "PROXY TCP4 1.2.3.4 5.6.7.8 0443 2\r\n", proxyproto.ReasonV1Port),
		R("v1/port-00", "PROXY TCP4 1.2.3.4 5.6.7.8 1 00\r\n", proxyproto.ReasonV1Port),
		R("v1/port-sign", "PROXY TCP4 1.2.3.4 5.6.7.8 +80 2\r\n", proxyproto.ReasonV1Port),
		R("v1/tcp4-with-ipv6", "PROXY TCP4 2001:db8::1 5.6.7.8 1 2\r\n", proxyproto.ReasonV1AddressFamily),
		R("v1/tcp4-with-v4-mapped", "PROXY TCP4 ::ffff:1.2.3.4 5.6.7.8 1 2\r\n", proxyproto.ReasonV1AddressFamily),
		R("v1/tcp6-with-ipv4", "PROXY TCP6 1.2.3.4 2001:db8::1 1 2\r\n", proxyproto.ReasonV1AddressFamily),
		R("v1/tcp6-nginx-mixed", "PROXY TCP6 2001:db8::1 192.0.2.1 1 2\r\n", proxyproto.ReasonV1AddressFamily),
		R("v1/ipv6-two-ellipses", "PROXY TCP6 2001::db8::1 ::1 1 2\r\n", proxyproto.ReasonV1Address),
		R("v1/ipv6-7-groups", "PROXY TCP6 1:2:3:4:5:6:7 ::1 1 2\r\n", proxyproto.ReasonV1Address),
		R("v1/ipv6-9-groups", "PROXY TCP6 1:2:3:4:5:6:7:8:9 ::1 1 2\r\n", proxyproto.ReasonV1Address),
		R("v1/ipv6-ellipsis-for-nothing", "PROXY TCP6 1:2:3:4:5:6:7:8:: ::1 1 2\r\n", proxyproto.ReasonV1Address),
		R("v1/ipv6-5-digit-group", "PROXY TCP6 2001:0db80::1 ::1 1 2\r\n", proxyproto.ReasonV1Address),
		R("v1/ipv6-zone", "PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n", proxyproto.ReasonV1Address),
		R("v1/ipv6-brackets", "PROXY TCP6 [2001:db8::1] ::1 1 2\r\n", proxyproto.ReasonV1Address),
		R("v1/ipv6-trailing-colon", "PROXY TCP6 2001:db8::1: ::1 1 2\r\n", proxyproto.ReasonV1Address),
		R("v1/ipv6-v4-mapped-heading-zero", "PROXY TCP6 ::ffff:192.0.2.01 ::1 1 2\r\n", proxyproto.ReasonV1Address),

		// v2, valid.
		V("v2/proxy-tcp4", v2(0x21, 0x11, block4), "v2 PROXY TCP4 192.0.2.1:56324 198.51.100.2:443"),
		V("v2/proxy-udp4", v2(0x21, 0x12, block4), "v2 PROXY UDP4 192.0.2.1:56324 198.51.100.2:443"),
		V("v2/proxy-tcp6", v2(0x21, 0x21, block6), "v2 PROXY TCP6 [2001:db8::1]:1234 [2001:db8::2]:443"),
		V("v2/proxy-udp6", v2(0x21, 0x22, block6), "v2 PROXY UDP6 [2001:db8::1]:1234 [2001:db8::2]:443"),
		V("v2/proxy-tcp6-v4-mapped-kept", v2(0x21, 0x21, mapped, v6b, u16(1), u16(2)), "v2 PROXY TCP6 [::ffff:192.0.2.1]:1 [2001:db8::2]:2"),
		V("v2/proxy-unix-stream", v2(0x21, 0x31, unixPath("/run/src.sock"), unixPath("/run/dst.sock")), `v2 PROXY UNIX-STREAM unix="/run/src.sock","/run/dst.sock"`),
		V("v2/proxy-unix-dgram-108", v2(0x21, 0x32, strings.Repeat("s", 108), unixPath("/d")), `v2 PROXY UNIX-DGRAM unix="`+strings.Repeat("s", 108)+`","/d"`),
		V("v2/proxy-unix-abstract", v2(0x21, 0x31, unixPath("\x00abstract"), unixPath("/d")), `v2 PROXY UNIX-STREAM unix="\x00abstract","/d"`),
		V("v2/local-unspec", v2(0x20, 0x00), "v2 LOCAL UNSPEC"),
		V("v2/local-tcp4-block-ignored", v2(0x20, 0x11, block4), "v2 LOCAL UNSPEC"),
		V("v2/local-tcp4-len-0", v2(0x20, 0x11), "v2 LOCAL UNSPEC"),
		V("v2/local-tcp4-short-block-skipped", v2(0x20, 0x11, "\x01\x02\x03\x04\x05"), "v2 LOCAL UNSPEC"),
		V("v2/local-unspec-with-tlv", v2(0x20, 0x00, tlv(0x01, "h2")), "v2 LOCAL UNSPEC tlv=01:6832"),
		V("v2/local-tcp4-block-and-tlv", v2(0x20, 0x11, block4, tlv(0x05, "id")), "v2 LOCAL UNSPEC tlv=05:6964"),
		V("v2/tlv-alpn-authority", v2(0x21, 0x21, block6, tlv(0x01, "h2"), tlv(0x02, "example.com")), "v2 PROXY TCP6 [2001:db8::1]:1234 [2001:db8::2]:443 tlv=01:6832,02:6578616d706c652e636f6d"),
		V("v2/crc32c-good", withCRC(crcHdr, crcAt), "v2 PROXY TCP4 192.0.2.1:56324 198.51.100.2:443 tlv=01:6832,03:"+fmt.Sprintf("%x", withCRC(crcHdr, crcAt)[crcAt:])),
		V("v2/noop-empty", v2(0x21, 0x11, block4, tlv(0x04, "")), "v2 PROXY TCP4 192.0.2.1:56324 198.51.100.2:443 tlv=04:"),
		V("v2/unique-id-128", v2(0x21, 0x11, block4, tlv(0x05, strings.Repeat("u", 128))), "v2 PROXY TCP4 192.0.2.1:56324 198.51.100.2:443 tlv=05:"+strings.Repeat("75", 128)),
		V("v2/ssl", v2(0x21, 0x11, block4, ssl), "v2 PROXY TCP4 192.0.2.1:56324 198.51.100.2:443 tlv=20:"+fmt.Sprintf("%x", ssl[3:])),
		V("v2/ssl-5-bytes", v2(0x21, 0x11, block4, tlv(0x20, "\x00\x00\x00\x00\x01")), "v2 PROXY TCP4 192.0.2.1:56324 198.51.100.2:443 tlv=20:0000000001"),
		V("v2/cloud", v2(0x21, 0x11, block4, tlv(0xEA, "\x01vpce-08d2bf15fac5001c9"), tlv(0xEE, "\x01\x01\x02\x03\x04"), tlv(0xE0, "\x00\x00\x00\x00\x00\x00\x01\x00")),
			"v2 PROXY TCP4 192.0.2.1:56324 198.51.100.2:443 tlv=ea:01"+fmt.Sprintf("%x", "vpce-08d2bf15fac5001c9")+",ee:0101020304,e0:0000000000000100"),
		V("v2/unknown-experimental-future", v2(0x21, 0x11, block4, tlv(0x31, "?"), tlv(0xF0, ""), tlv(0xFF, "z")), "v2 PROXY TCP4 192.0.2.1:56324 198.51.100.2:443 tlv=31:3f,f0:,ff:7a"),
		V("v2/duplicates-kept", v2(0x21, 0x11, block4, tlv(0x01, "h2"), tlv(0x01, "http/1.1")), "v2 PROXY TCP4 192.0.2.1:56324 198.51.100.2:443 tlv=01:6832,01:687474702f312e31"),
		V("v2/611-bytes", big611, "v2 PROXY TCP4 192.0.2.1:56324 198.51.100.2:443 tlv=e5:"+strings.Repeat("78", 611-31)),
		V("v2/4131-bytes", big4131, "v2 PROXY TCP4 192.0.2.1:56324 198.51.100.2:443 tlv=28:"+strings.Repeat("63", 4131-31)),
		{name: "v2/second-header-left-as-payload", hdr: v2(0x21, 0x11, block4), tail: v2(0x21, 0x11, block4), want: "v2 PROXY TCP4 192.0.2.1:56324 198.51.100.2:443"},

		// v2, invalid.
		R("v2/version-0", v2(0x01, 0x11, block4), proxyproto.ReasonV2Version),
		R("v2/version-1", v2(0x11, 0x11, block4), proxyproto.ReasonV2Version),
		R("v2/version-3", v2(0x31, 0x11, block4), proxyproto.ReasonV2Version),
		R("v2/version-decided-at-byte-13", sig2+"\x11", proxyproto.ReasonV2Version),
		R("v2/command-2", v2(0x22, 0x11, block4), proxyproto.ReasonV2Command),
		R("v2/command-f", v2(0x2F, 0x11, block4), proxyproto.ReasonV2Command),
		R("v2/family-4", v2(0x21, 0x41, block4), proxyproto.ReasonV2Protocol),
		R("v2/transport-3", v2(0x21, 0x13, block4), proxyproto.ReasonV2Protocol),
		R("v2/unlisted-0x10", v2(0x21, 0x10, block4), proxyproto.ReasonV2Protocol),
		R("v2/unlisted-0x20", v2(0x21, 0x20, block6), proxyproto.ReasonV2Protocol),
		R("v2/unlisted-0x01", v2(0x21, 0x01, block4), proxyproto.ReasonV2Protocol),
		R("v2/local-transport-3", v2(0x20, 0x13, block4), proxyproto.ReasonV2Protocol),
		R("v2/proxy-unspec", v2(0x21, 0x00), proxyproto.ReasonV2UnspecProxy),
		R("v2/tcp4-len-11", v2(0x21, 0x11, block4[:11]), proxyproto.ReasonV2Length),
		R("v2/tcp4-len-0", v2(0x21, 0x11), proxyproto.ReasonV2Length),
		R("v2/tcp6-len-35", v2(0x21, 0x21, block6[:35]), proxyproto.ReasonV2Length),
		R("v2/unix-len-215", v2(0x21, 0x31, strings.Repeat("\x00", 215)), proxyproto.ReasonV2Length),
		E("v2/fixed-part-truncated", v2(0x21, 0x11)[:15], proxyproto.ErrIncomplete),
		E("v2/block-truncated", v2len(0x21, 0x11, 12, block4[:8]), proxyproto.ErrIncomplete),
		E("v2/len-beyond-data", v2len(0x21, 0x11, 100, block4, get), proxyproto.ErrIncomplete),
		E("v2/len-65535", v2len(0x21, 0x11, 65535, block4, get), proxyproto.ErrIncomplete),
		R("v2/tlv-length-overflow", v2(0x21, 0x11, block4, tlv(0x01, "h2")[:4]), proxyproto.ReasonTLVTruncated),
		R("v2/tlv-length-0xffff", v2(0x21, 0x11, block4, "\x01\xff\xffabc"), proxyproto.ReasonTLVTruncated),
		R("v2/tlv-dangling-1-byte", v2(0x21, 0x11, block4, tlv(0x01, "h2"), "\x04"), proxyproto.ReasonTLVTruncated),
		R("v2/tlv-dangling-2-bytes", v2(0x21, 0x11, block4, "\x04\x00"), proxyproto.ReasonTLVTruncated),
		R("v2/local-malformed-tlv", v2(0x20, 0x00, "\x01\x00\x09h2"), proxyproto.ReasonTLVTruncated),
		R("v2/crc32c-mismatch", crcHdr[:crcAt]+"\xde\xad\xbe\xef", proxyproto.ReasonCRC32CMismatch),
		R("v2/crc32c-wrong-length", v2(0x21, 0x11, block4, tlv(0x03, "\x00\x00\x00")), proxyproto.ReasonCRC32CLength),
		R("v2/unique-id-129", v2(0x21, 0x11, block4, tlv(0x05, strings.Repeat("u", 129))), proxyproto.ReasonUniqueIDTooLong),
		R("v2/ssl-tlv-too-short", v2(0x21, 0x11, block4, tlv(0x20, "\x01\x00\x00\x00")), proxyproto.ReasonSSLMalformed),
		R("v2/ssl-subtlv-overflow", v2(0x21, 0x11, block4, tlv(0x20, "\x01\x00\x00\x00\x00"+"\x21\x00\x09TLS")), proxyproto.ReasonSSLMalformed),
	}
}

// describe renders a header for comparison with a vector.
func describe(h proxyproto.Header) string {
	var b strings.Builder
	fmt.Fprintf(&b, "v%d %s %s", h.Version, h.Command, h.Protocol)
	if h.Source.IsValid() {
		fmt.Fprintf(&b, " %s %s", h.Source, h.Destination)
	}
	if s, d := h.UnixPaths(); s != nil {
		fmt.Fprintf(&b, " unix=%q,%q", s, d)
	}
	it := h.TLVs()
	sep := " tlv="
	for t, ok := it.Next(); ok; t, ok = it.Next() {
		fmt.Fprintf(&b, "%s%02x:%x", sep, uint8(t.Type), t.Value)
		sep = ","
	}
	return b.String()
}

// describeTLVs renders a well-framed raw chain as describe does, without
// the package's iterator.
func describeTLVs(raw []byte) string {
	var b strings.Builder
	sep := " tlv="
	for len(raw) >= 3 {
		l := 3 + (int(raw[1])<<8 | int(raw[2]))
		fmt.Fprintf(&b, "%s%02x:%x", sep, raw[0], raw[3:l])
		raw, sep = raw[l:], ","
	}
	return b.String()
}

func TestVectors(t *testing.T) {
	vs := vectors()
	if len(vs) < 50 {
		t.Fatalf("only %d vectors", len(vs))
	}
	names := map[string]bool{}
	for _, v := range vs {
		if names[v.name] {
			t.Fatalf("duplicate vector name %q", v.name)
		}
		names[v.name] = true
		t.Run(v.name, func(t *testing.T) {
			in := []byte(v.hdr + v.tail)
			h, n, err := proxyproto.Parse(in)
			switch {
			case v.err != nil:
				if err != v.err {
					t.Fatalf("Parse = %v, want %v", err, v.err)
				}
			case v.reason != 0:
				var pe *proxyproto.ParseError
				if !errors.As(err, &pe) || pe.Reason != v.reason {
					t.Fatalf("Parse = %v, want reason %q", err, v.reason)
				}
				if !errors.Is(err, proxyproto.ErrInvalidHeader) {
					t.Fatalf("%v does not match ErrInvalidHeader", err)
				}
			default:
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if n != len(v.hdr) {
					t.Fatalf("consumed %d bytes, want %d", n, len(v.hdr))
				}
				if got := describe(h); got != v.want {
					t.Fatalf("header\n got %s\nwant %s", got, v.want)
				}
				// Every prefix of a valid header is incomplete, never invalid.
				for i := range len(v.hdr) {
					if _, _, err := proxyproto.Parse(in[:i]); err != proxyproto.ErrIncomplete {
						t.Fatalf("Parse(first %d bytes) = %v, want ErrIncomplete", i, err)
					}
				}
			}
		})
	}
}
