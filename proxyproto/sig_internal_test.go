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
