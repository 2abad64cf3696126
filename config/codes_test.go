package config

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCodesDocumented checks that the table in codes.go lists every code,
// and each once.
func TestCodesDocumented(t *testing.T) {
	src, err := os.ReadFile("codes.go")
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, c := range Codes() {
		assert.False(t, seen[c], "code %s listed twice", c)
		seen[c] = true
		assert.Contains(t, string(src), "//\t"+c+" ", "code %s is not in the table", c)
	}
}
