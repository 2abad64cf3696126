package strictdecode

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A value a document repeats is decoded once, on both fast decoders: the
// elements' names share one string (and the whole decode allocates fewer
// times than the values), values that differ stay apart, and strings too
// long to intern are each their own.
func TestRepeatedStringsAreOneString(t *testing.T) {
	long := strings.Repeat("x", maxInterned+1)
	var js, ym strings.Builder
	js.WriteString(`{"items":[`)
	ym.WriteString("items:\n")
	for i := range 100 {
		name := "http://127.0.0.1:9"
		if i%2 == 1 {
			name = "d" + fmt.Sprint(i%10)
		}
		if i == 99 {
			name = long
		}
		if i > 0 {
			js.WriteString(",")
		}
		fmt.Fprintf(&js, `{"name":%q}`, name)
		fmt.Fprintf(&ym, "- name: %s\n  count: 1\n", name)
	}
	js.WriteString(`]}`)
	for format, data := range map[string]string{"json": js.String(), "yaml": ym.String()} {
		t.Run(format, func(t *testing.T) {
			d, ok := testDecoder.DecodeFast([]byte(data))
			require.True(t, ok)
			require.Len(t, d.Items, 100)
			first := map[string]*byte{}
			for i, it := range d.Items[:99] {
				if p, ok := first[it.Name]; ok {
					assert.Same(t, p, unsafe.StringData(it.Name), "item %d", i)
				} else {
					first[it.Name] = unsafe.StringData(it.Name)
				}
			}
			assert.Len(t, first, 6, "an address and five IDs")
			assert.Equal(t, long, d.Items[99].Name)
			allocs := testing.AllocsPerRun(10, func() { testDecoder.DecodeFast([]byte(data)) })
			assert.Less(t, allocs, 50.0, "far fewer than one per name")
		})
	}
}
