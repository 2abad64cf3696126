package proxy_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/proxy"
)

// TestForServerName: one transport per server name, made the first time
// the name is seen and found without allocating after that, up to
// MaxServerNames names.
func TestForServerName(t *testing.T) {
	tr := proxy.NewTransport(proxy.ClientConfig{})
	defer tr.CloseIdleConnections()
	a, ok := tr.ForServerName("a.test")
	require.True(t, ok)
	again, _ := tr.ForServerName("a.test")
	assert.Same(t, a, again)
	b, _ := tr.ForServerName("b.test")
	assert.NotSame(t, a, b)
	assert.Equal(t, "a.test", a.(*http.Transport).TLSClientConfig.ServerName)
	assert.Equal(t, "b.test", b.(*http.Transport).TLSClientConfig.ServerName)
	assert.Zero(t, testing.AllocsPerRun(100, func() { tr.ForServerName("a.test") }))

	for i := 2; i < proxy.MaxServerNames; i++ {
		_, ok := tr.ForServerName("n" + strconv.Itoa(i) + ".test")
		require.True(t, ok, i)
	}
	rt, ok := tr.ForServerName("one-too-many.test")
	assert.False(t, ok, "the transport holds MaxServerNames names")
	assert.Nil(t, rt, "a nil interface, not a nil *http.Transport")
	_, ok = tr.ForServerName("a.test")
	assert.True(t, ok, "known names still work when full")
}
