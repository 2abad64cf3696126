package proxyproto_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	goproxyproto "github.com/pires/go-proxyproto"

	"github.com/paduraksa/paduraksa/proxyproto"
)

func addVectorSeeds(f *testing.F) {
	for _, v := range vectors() {
		f.Add([]byte(v.hdr + v.tail))
	}
}

// FuzzParse checks Parse's decisions on its own input, with no other
// parser to compare with (FuzzDifferential does that):
//   - its errors are of the three documented kinds, and ErrNoProxyHeader
//     is returned exactly when the input is not compatible with either
//     signature;
//   - a decision is final: every prefix of the input is incomplete or
//     decided the same way as the whole input (same error, or the same
//     header and length), so a reader that feeds bytes as they arrive
//     cannot see a different answer;
//   - a parsed header encodes and parses back to itself, and where the
//     input is written the one way AppendTo writes it (canonical), the
//     encoding is the input byte for byte.
func FuzzParse(f *testing.F) {
	addVectorSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := proxyproto.Parse(b)
		if err != nil && err != proxyproto.ErrIncomplete && err != proxyproto.ErrNoProxyHeader && !errors.Is(err, proxyproto.ErrInvalidHeader) {
			t.Fatalf("unexpected error kind %v", err)
		}
		if noSig := len(b) > 0 && !compatible(b, "PROXY") && !compatible(b, sig2); noSig != (err == proxyproto.ErrNoProxyHeader) {
			t.Fatalf("Parse = %v; the input is compatible with no signature: %v", err, noSig)
		}
		// Prefixes longer than a parsed header are that header again; past
		// 512 bytes only a v2 header's end decides, and the whole input
		// stands for it.
		whole, last := describeResult(h, n, err), n
		if err != nil {
			last = min(len(b), 512)
		}
		for k := 0; k <= last; k++ {
			if kh, kn, kerr := proxyproto.Parse(b[:k]); kerr != proxyproto.ErrIncomplete {
				if got := describeResult(kh, kn, kerr); got != whole {
					t.Fatalf("the first %d bytes decide %s, the whole input %s", k, got, whole)
				}
			} else if err == nil && k == n {
				t.Fatalf("the %d bytes of the header parsed are incomplete alone", n)
			}
		}
		if err != nil {
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		enc, err := h.AppendTo(nil)
		if err != nil {
			t.Fatalf("AppendTo of a parsed header: %v", err)
		}
		h2, n2, err := proxyproto.Parse(enc)
		if err != nil || n2 != len(enc) {
			t.Fatalf("Parse(AppendTo) = %d, %v; encoded %q", n2, err, enc)
		}
		if describe(h2) != describe(h) {
			t.Fatalf("round trip\n got %s\nwant %s", describe(h2), describe(h))
		}
		if canonical(b[:n]) && !bytes.Equal(enc, b[:n]) {
			t.Fatalf("canonical header %q encodes as %q", b[:n], enc)
		}
	})
}

// compatible reports whether b and sig agree on their common length.
func compatible(b []byte, sig string) bool {
	k := min(len(b), len(sig))
	return string(b[:k]) == sig[:k]
}

// describeResult renders a Parse result for comparison.
func describeResult(h proxyproto.Header, n int, err error) string {
	if err != nil {
		return err.Error()
	}
	return strconv.Itoa(n) + " bytes: " + describe(h)
}

// canonical reports whether hdr, a header Parse accepted, is written the
// one way AppendTo writes it, judged from its bytes alone: every v2 PROXY
// header and every TCP4 line (no other spelling of them is valid), a v2
// LOCAL header with the UNSPEC family, "PROXY UNKNOWN\r\n" alone, and a
// TCP6 line whose addresses are in their RFC 5952 form, as net/netip
// writes them.
func canonical(hdr []byte) bool {
	if hdr[0] != 'P' {
		return hdr[12]&0x0F == 1 || hdr[13] == 0
	}
	f := strings.Split(string(hdr[:len(hdr)-2]), " ")
	switch f[1] {
	case "TCP4":
		return true
	case "TCP6":
		return len(f) == 6 && isRFC5952(f[2]) && isRFC5952(f[3])
	}
	return string(hdr) == "PROXY UNKNOWN\r\n"
}

func isRFC5952(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.String() == s
}

// FuzzAppend builds headers from arbitrary fields. AppendTo must refuse
// exactly what refEncode refuses and otherwise write the bytes refEncode
// writes, and those bytes must parse back to the header it was given:
// version, command, protocol, addresses, UNIX paths and every TLV type and
// value in order (with the CRC32C value filled in). LOCAL headers carry no
// addresses, so they come back with none.
func FuzzAppend(f *testing.F) {
	f.Add(uint8(2), uint8(1), uint8(0x11), []byte("\xc0\x00\x02\x01"), []byte("\xc6\x33\x64\x02"), uint16(1), uint16(2), []byte(tlv(0x03, "\x00\x00\x00\x00")), false)
	f.Add(uint8(1), uint8(1), uint8(0x21), []byte(v6a), []byte(mapped), uint16(0), uint16(65535), []byte(nil), false)
	f.Add(uint8(2), uint8(1), uint8(0x21), []byte(v6a), []byte(v6b), uint16(80), uint16(443), []byte(tlv(0x01, "h2")+tlv(0x02, "example.com")), false)
	f.Add(uint8(2), uint8(1), uint8(0x22), []byte(v6a), []byte(v6b), uint16(80), uint16(443), []byte(nil), true)
	f.Add(uint8(1), uint8(1), uint8(0x21), []byte(v6a), []byte(v6b), uint16(80), uint16(443), []byte(nil), true)
	f.Add(uint8(1), uint8(0), uint8(0x11), []byte(nil), []byte(nil), uint16(0), uint16(0), []byte(tlv(0x01, "h2")), false)
	f.Add(uint8(2), uint8(0), uint8(0x31), []byte("/a"), []byte("\x00b"), uint16(0), uint16(0), []byte(tlv(0x20, "\x01\x00\x00\x00\x00"+tlv(0x21, "TLSv1.3"))), false)
	f.Add(uint8(2), uint8(1), uint8(0x32), []byte("/a\x00"), []byte("\x00b"), uint16(0), uint16(0), []byte(tlv(0x05, "id")+tlv(0x03, "\x00\x00\x00\x00")), false)
	f.Fuzz(func(t *testing.T, version, cmd, proto uint8, src, dst []byte, sp, dp uint16, tlvs []byte, zoned bool) {
		h := proxyproto.Header{Version: version, Command: proxyproto.Command(cmd), Protocol: proxyproto.Protocol(proto)}
		if h.Protocol.IsUnix() {
			if !h.SetUnixPaths(src, dst) {
				return
			}
		} else {
			if s, ok := netip.AddrFromSlice(src); ok {
				if zoned {
					s = s.WithZone("eth0")
				}
				h.Source = netip.AddrPortFrom(s, sp)
			}
			if d, ok := netip.AddrFromSlice(dst); ok {
				h.Destination = netip.AddrPortFrom(d, dp)
			}
		}
		h.SetTLVs(tlvs)
		want, ok := refEncode(h, src, dst)
		enc, err := h.AppendTo(nil)
		if err != nil {
			if !errors.Is(err, proxyproto.ErrCannotEncode) {
				t.Fatalf("AppendTo error %v does not match ErrCannotEncode", err)
			}
			if ok {
				t.Fatalf("AppendTo refused (%v) what the reference encodes as %q", err, want)
			}
			return
		}
		if !ok {
			t.Fatalf("AppendTo encoded %q, which the reference refuses", enc)
		}
		if !bytes.Equal(enc, want) {
			t.Fatalf("AppendTo wrote\n%q\nwant\n%q", enc, want)
		}
		got, n, err := proxyproto.Parse(enc)
		if err != nil || n != len(enc) {
			t.Fatalf("Parse(%q) = %d, %v", enc, n, err)
		}
		exp := proxyproto.Header{Version: h.Version, Command: h.Command}
		if h.Command == proxyproto.Proxy {
			exp.Protocol, exp.Source, exp.Destination = h.Protocol, h.Source, h.Destination
			if h.Protocol.IsUnix() {
				exp.SetUnixPaths(src, dst)
			}
		}
		if h.Version == 2 {
			exp.SetTLVs(want[len(want)-len(tlvs):])
		}
		if describe(got) != describe(exp) || got.Source != exp.Source || got.Destination != exp.Destination ||
			!bytes.Equal(got.RawTLVs(), exp.RawTLVs()) {
			t.Fatalf("parsed back\n got %s\nwant %s", describe(got), describe(exp))
		}
	})
}

// refEncode is the reference encoder, written from the specification, for
// a header built as FuzzAppend builds it (src and dst are the raw UNIX
// paths). v1 carries LOCAL as "PROXY UNKNOWN" and PROXY over TCP4 and TCP6
// with the addresses in their RFC 5952 text, and no TLVs. v2 carries LOCAL
// with the UNSPEC family and no address block, and PROXY over the six
// defined families; the TLVs follow the block, the first 4-byte CRC32C
// value filled in, and must pass refTLVReason. Addresses must be of the
// protocol's family and carry no zone; the length field is at most 65535.
// It reports false for a header that cannot be encoded.
func refEncode(h proxyproto.Header, src, dst []byte) ([]byte, bool) {
	s, d := h.Source.Addr(), h.Destination.Addr()
	fits := func(v6 bool) bool {
		if v6 {
			return s.Is6() && d.Is6() && s.Zone() == "" && d.Zone() == ""
		}
		return s.Is4() && d.Is4()
	}
	tlvs := h.RawTLVs()
	switch {
	case h.Version == 1 && len(tlvs) > 0:
		return nil, false
	case h.Version == 1 && h.Command == proxyproto.Local:
		return []byte("PROXY UNKNOWN\r\n"), true
	case h.Version == 1 && h.Command == proxyproto.Proxy:
		p := map[proxyproto.Protocol]string{proxyproto.TCP4: "TCP4", proxyproto.TCP6: "TCP6"}[h.Protocol]
		if p == "" || !fits(h.Protocol == proxyproto.TCP6) {
			return nil, false
		}
		return fmt.Appendf(nil, "PROXY %s %s %s %d %d\r\n", p, s, d, h.Source.Port(), h.Destination.Port()), true
	case h.Version != 2 || h.Command != proxyproto.Local && h.Command != proxyproto.Proxy:
		return nil, false
	}
	var block []byte
	fam := byte(0)
	if h.Command == proxyproto.Proxy {
		fam = byte(h.Protocol)
		switch fam {
		case 0x11, 0x12, 0x21, 0x22:
			if !fits(fam>>4 == 2) {
				return nil, false
			}
			block = append(s.AsSlice(), d.AsSlice()...)
			block = binary.BigEndian.AppendUint16(block, h.Source.Port())
			block = binary.BigEndian.AppendUint16(block, h.Destination.Port())
		case 0x31, 0x32:
			block = make([]byte, 216)
			copy(block, src)
			copy(block[108:], dst)
		default:
			return nil, false
		}
	}
	length := len(block) + len(tlvs)
	if length > 0xFFFF {
		return nil, false
	}
	out := append([]byte(sig2), 0x20|byte(h.Command), fam, byte(length>>8), byte(length))
	out = append(append(out, block...), tlvs...)
	start := len(out) - len(tlvs)
	fixCRC32C(out, start)
	if refTLVReason(out, start) != 0 {
		return nil, false
	}
	return out, true
}

// FuzzTLVs wraps arbitrary bytes as the TLVs of a v2 header and checks
// Parse against refTLVReason, a reference written from the specification:
// Parse accepts exactly the chains the reference accepts, refuses the
// others with the reason of their first bad record, and its iterator gives
// back the chain byte for byte. With fix set, the first 4-byte CRC32C value
// is first set to the checksum refCRC32C computes (hash/crc32's Castagnoli
// table over the header with that value zeroed), so that valid checksums
// are exercised as well as wrong ones.
func FuzzTLVs(f *testing.F) {
	f.Add(false, []byte(tlv(0x01, "h2")+tlv(0x02, "example.com")))
	f.Add(false, []byte(tlv(0x20, "\x07\x00\x00\x00\x00"+tlv(0x21, "TLSv1.3")+tlv(0x22, "cn"))))
	f.Add(false, []byte(tlv(0x05, "id")+tlv(0x04, "")+tlv(0xEA, "\x01vpce-1")+tlv(0xEE, "\x01\x01\x00\x00\x00")+tlv(0xE0, "12345678")))
	f.Add(false, []byte(tlv(0x03, "\x00\x00\x00\x00")))
	f.Add(true, []byte(tlv(0x01, "h2")+tlv(0x03, "\x00\x00\x00\x00")+tlv(0x02, "example.com")))
	f.Add(true, []byte(tlv(0x03, "\x00\x00\x00\x00")+tlv(0x03, "\x00\x00\x00\x00")))
	f.Add(false, []byte("\x01\x00"))
	f.Fuzz(func(t *testing.T, fix bool, raw []byte) {
		if len(raw) > 0xFFFF-12 {
			return
		}
		in := []byte(v2(0x21, 0x11, block4, string(raw)))
		const start = 16 + 12
		if fix {
			fixCRC32C(in, start)
		}
		want := refTLVReason(in, start)
		h, n, err := proxyproto.Parse(in)
		if want != 0 {
			var pe *proxyproto.ParseError
			if !errors.As(err, &pe) || pe.Reason != want {
				t.Fatalf("Parse = %v, want reason %q", err, want)
			}
			return
		}
		if err != nil || n != len(in) {
			t.Fatalf("Parse = %d, %v; want the %d-byte header accepted", n, err, len(in))
		}
		if got := describe(h); got != "v2 PROXY TCP4 192.0.2.1:56324 198.51.100.2:443"+describeTLVs(in[start:]) {
			t.Fatalf("header %s", got)
		}
		var rebuilt []byte
		it := h.TLVs()
		for tv, ok := it.Next(); ok; tv, ok = it.Next() {
			rebuilt = proxyproto.AppendTLV(rebuilt, tv.Type, tv.Value)
			if s, ok := tv.SSL(); ok {
				sub := s.TLVs()
				for _, ok := sub.Next(); ok; _, ok = sub.Next() {
				}
				if sub.Err() != nil {
					t.Fatalf("SSL sub-TLVs: %v", sub.Err())
				}
			}
			_, _ = tv.AWSVPCEndpointID()
			_, _ = tv.AzureLinkID()
			_, _ = tv.GCPConnectionID()
		}
		if it.Err() != nil || !bytes.Equal(rebuilt, in[start:]) {
			t.Fatalf("iterator rebuilt %x from %x (err %v)", rebuilt, in[start:], it.Err())
		}
	})
}

// refTLVReason is the reference for the TLV rules, written from the
// specification: it walks the chain of the complete v2 header hdr from
// offset start and returns the reason of the first record that breaks a
// rule, or 0. A record needs 3 bytes of type and length and its whole
// value; a CRC32C value is 4 bytes and equals refCRC32C; a UNIQUE_ID is at
// most 128 bytes; an SSL value passes sslValid.
func refTLVReason(hdr []byte, start int) proxyproto.Reason {
	for off := start; off < len(hdr); {
		if len(hdr)-off < 3 {
			return proxyproto.ReasonTLVTruncated
		}
		l := int(hdr[off+1])<<8 | int(hdr[off+2])
		if off+3+l > len(hdr) {
			return proxyproto.ReasonTLVTruncated
		}
		v := hdr[off+3 : off+3+l]
		switch hdr[off] {
		case 0x03:
			if l != 4 {
				return proxyproto.ReasonCRC32CLength
			}
			if binary.BigEndian.Uint32(v) != refCRC32C(hdr, off+3) {
				return proxyproto.ReasonCRC32CMismatch
			}
		case 0x05:
			if l > 128 {
				return proxyproto.ReasonUniqueIDTooLong
			}
		case 0x20:
			if !sslValid(v) {
				return proxyproto.ReasonSSLMalformed
			}
		}
		off += 3 + l
	}
	return 0
}

// refCRC32C returns the CRC32C (RFC 4960 appendix B, the Castagnoli
// polynomial) of hdr with the 4-byte checksum field at offset at zeroed.
func refCRC32C(hdr []byte, at int) uint32 {
	b := bytes.Clone(hdr)
	clear(b[at : at+4])
	return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
}

// fixCRC32C sets the first 4-byte CRC32C value of the chain of hdr that
// starts at start to its checksum. A chain that breaks off is left alone
// from there.
func fixCRC32C(hdr []byte, start int) {
	for off := start; off+3 <= len(hdr); {
		l := int(hdr[off+1])<<8 | int(hdr[off+2])
		if off+3+l > len(hdr) {
			return
		}
		if hdr[off] == 0x03 && l == 4 {
			binary.BigEndian.PutUint32(hdr[off+3:], refCRC32C(hdr, off+3))
			return
		}
		off += 3 + l
	}
}

// go-proxyproto v0.15.0 differs from this package in documented ways only.
// Where it accepts what Parse refuses (its leniencies):
//
//  1. It does not check TLVs while parsing: a TLV running past the header,
//     1 or 2 dangling bytes (also on LOCAL) are accepted, and an error
//     appears only if the application calls Header.TLVs.
//  2. It has no CRC32C support: a mismatching checksum or a CRC32C TLV
//     whose value is not 4 bytes is accepted.
//  3. It accepts a UNIQUE_ID TLV longer than 128 bytes.
//  4. It does not check the SSL TLV (shorter than 5 bytes, sub-TLVs
//     running past it).
//
// Where it refuses what Parse accepts:
//
//  5. v2 headers whose length exceeds its process-wide MaxV2HeaderSize
//     (4096) are refused with ErrInvalidLength; the specification allows
//     65535, and the limit is a resource decision (Config.MaxHeaderLength
//     here).
//
// Where both accept but report differently:
//
//  6. AF_UNIX paths are cut at the first NUL, so abstract socket names
//     become empty; Parse keeps the name.
//  7. For LOCAL it reports the family byte and any informational addresses;
//     Parse reports Unspec and no addresses, as the block must be ignored.
//     Only PROXY headers are compared field by field.
func isGoProxyprotoLeniency(r proxyproto.Reason) bool {
	switch r {
	case proxyproto.ReasonTLVTruncated, proxyproto.ReasonCRC32CMismatch, proxyproto.ReasonCRC32CLength,
		proxyproto.ReasonUniqueIDTooLong, proxyproto.ReasonSSLMalformed:
		return true
	}
	return false
}

const goProxyprotoMaxV2 = 16 + 4096

// FuzzDifferential parses every input with Parse and with go-proxyproto's
// Read (whole input buffered, as a stream that ends after it) and fails on
// any disagreement outside the documented classes above. A refusal in
// classes 1-4 must also be the one refTLVReason gives, so that a leniency
// never excuses a valid header refused.
func FuzzDifferential(f *testing.F) {
	addVectorSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := proxyproto.Parse(b)
		br := bufio.NewReaderSize(bytes.NewReader(b), max(16, len(b)))
		gh, gerr := goproxyproto.Read(br)
		consumed := len(b) - br.Buffered()

		switch {
		case err != nil && gerr != nil:
			return
		case err != nil:
			// A leniency excuses only a refusal the reference confirms.
			var pe *proxyproto.ParseError
			if errors.As(err, &pe) && isGoProxyprotoLeniency(pe.Reason) {
				if want := refTLVReason(b[:consumed], v2TLVStart(b)); pe.Reason != want {
					t.Fatalf("Parse refused with %q what go-proxyproto accepted; the reference says %q", pe.Reason, want)
				}
				return
			}
			t.Fatalf("Parse refused (%v) what go-proxyproto accepted: %+v", err, gh)
		case gerr != nil:
			if errors.Is(gerr, goproxyproto.ErrInvalidLength) && h.Version == 2 && n > goProxyprotoMaxV2 {
				return
			}
			t.Fatalf("go-proxyproto refused (%v) what Parse accepted: %s", gerr, describe(h))
		}

		if consumed != n {
			t.Fatalf("consumed %d, go-proxyproto %d", n, consumed)
		}
		if int(gh.Version) != int(h.Version) {
			t.Fatalf("version %d, go-proxyproto %d", h.Version, gh.Version)
		}
		if gh.Command.IsLocal() != (h.Command == proxyproto.Local) {
			t.Fatalf("command %v, go-proxyproto %#x", h.Command, gh.Command)
		}
		if h.Command == proxyproto.Proxy {
			if byte(gh.TransportProtocol) != byte(h.Protocol) {
				t.Fatalf("protocol %v, go-proxyproto %#x", h.Protocol, gh.TransportProtocol)
			}
			if h.Protocol.IsUnix() {
				s, d := h.UnixPaths()
				gs, _ := gh.SourceAddr.(*net.UnixAddr)
				gd, _ := gh.DestinationAddr.(*net.UnixAddr)
				if gs == nil || gd == nil || gs.Name != cutNUL(s) || gd.Name != cutNUL(d) {
					t.Fatalf("UNIX %q %q, go-proxyproto %v %v", s, d, gh.SourceAddr, gh.DestinationAddr)
				}
			} else if addrPort(t, gh.SourceAddr) != h.Source || addrPort(t, gh.DestinationAddr) != h.Destination {
				t.Fatalf("addresses %v %v, go-proxyproto %v %v", h.Source, h.Destination, gh.SourceAddr, gh.DestinationAddr)
			}
		}
		gtlvs, gerr := gh.TLVs()
		if gerr != nil {
			t.Fatalf("go-proxyproto TLVs: %v on a chain Parse accepted", gerr)
		}
		it := h.TLVs()
		for i := 0; ; i++ {
			tv, ok := it.Next()
			if !ok {
				if i != len(gtlvs) {
					t.Fatalf("%d TLVs, go-proxyproto %d", i, len(gtlvs))
				}
				break
			}
			if i >= len(gtlvs) || byte(gtlvs[i].Type) != byte(tv.Type) ||
				(tv.Type != proxyproto.TypeNoop && !bytes.Equal(gtlvs[i].Value, tv.Value)) {
				t.Fatalf("TLV %d differs: %02x %x", i, uint8(tv.Type), tv.Value)
			}
		}
	})
}

// v2TLVStart returns the offset of the TLVs in b, a complete v2 header:
// after the address block of its family, or at the end of a LOCAL header
// too short for the block it names (the block is then skipped whole).
func v2TLVStart(b []byte) int {
	total := 16 + (int(b[14])<<8 | int(b[15]))
	start := 16 + map[byte]int{0x1: 12, 0x2: 36, 0x3: 216}[b[13]>>4]
	return min(start, total)
}

// sslValid checks an SSL TLV value: 5 fixed bytes, then well-framed
// sub-TLVs.
func sslValid(v []byte) bool {
	if len(v) < 5 {
		return false
	}
	for rest := v[5:]; len(rest) > 0; {
		if len(rest) < 3 {
			return false
		}
		l := 3 + (int(rest[1])<<8 | int(rest[2]))
		if l > len(rest) {
			return false
		}
		rest = rest[l:]
	}
	return true
}

func cutNUL(b []byte) string {
	before, _, _ := bytes.Cut(b, []byte{0})
	return string(before)
}

func addrPort(t *testing.T, a net.Addr) netip.AddrPort {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.AddrPort()
	case *net.UDPAddr:
		return a.AddrPort()
	}
	t.Fatalf("unexpected address %T %v", a, a)
	return netip.AddrPort{}
}
