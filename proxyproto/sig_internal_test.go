package proxyproto

import (
	"encoding/binary"
	"testing"
)

func TestV2SigWords(t *testing.T) {
	if binary.LittleEndian.Uint64([]byte(v2Sig)) != v2Sig0 || binary.LittleEndian.Uint32([]byte(v2Sig[8:])) != v2Sig1 {
		t.Fatal("v2Sig0, v2Sig1 do not match v2Sig")
	}
}

func TestV1Words(t *testing.T) {
	for _, c := range []struct {
		got  uint64
		want string
	}{
		{v1Word0, "PROXY TC"}, {v1TCP4, "P4 "}, {v1TCP6, "P6 "}, {crlf, "\r\n"},
	} {
		w := make([]byte, 8)
		copy(w, c.want)
		if binary.LittleEndian.Uint64(w) != c.got {
			t.Errorf("%#x is not %q", c.got, c.want)
		}
	}
}
