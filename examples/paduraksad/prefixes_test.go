package main

import (
	"context"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlagPrefixesAreTheDocuments: -deny and -proxy-protocol-from read
// each entry by the rule the document's lists follow, so the daemon
// refuses the prefix the document refuses (host bits set after the
// length) and reads an IPv4-mapped one as IPv4, as the document does.
func TestFlagPrefixesAreTheDocuments(t *testing.T) {
	for _, flag := range []string{"-deny", "-proxy-protocol-from"} {
		// A daemon that took the flag would serve until the deadline.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var out, logs syncBuffer
		err := run(ctx, []string{"-listen", "127.0.0.1:0", "-https", "", "-admin", "off", flag, "192.0.2.0/24, 10.0.0.1/8"},
			options{stdout: &out, stderr: &logs})
		require.Error(t, err, flag)
		assert.Contains(t, err.Error(), flag)
		assert.Contains(t, err.Error(), `"10.0.0.1/8": bits set after the prefix length; did you mean 10.0.0.0/8?`)
	}
	for _, s := range []string{"10.0.0.1/8", "10.0.0.0/8", "192.0.2.7", "::ffff:192.0.2.0/120", "::ffff:0:0/64", "2001:db8::/32",
		"2001:db8::1/32", "fe80::1%eth0", "example.com", "10.0.0.0/33"} {
		want, wantErr := config.ParsePrefix(s)
		got, err := parsePrefixes(" " + s + " ,")
		if wantErr != nil {
			assert.Error(t, err, s)
			continue
		}
		require.NoError(t, err, s)
		assert.Equal(t, want, got[0], s)
	}
}
