package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClusterEndpoint: GET /cluster is 404 without a fleet, lists what
// Cluster returns, and answers 503 with a stable code when the fleet's
// state cannot be read.
func TestClusterEndpoint(t *testing.T) {
	none := newAPI(t, Config{})
	ans := none.do("GET", "/cluster", "")
	assert.Equal(t, http.StatusNotFound, ans.status)
	assert.Equal(t, CodeNotFound, errorCode(t, ans))

	var fail error
	a := newAPI(t, Config{Cluster: func(ctx context.Context) (any, error) {
		if fail != nil {
			return nil, fail
		}
		return []map[string]string{{"instance": "a"}, {"instance": "b"}}, nil
	}})
	ans = a.do("GET", "/cluster", "")
	require.Equal(t, http.StatusOK, ans.status, ans.body)
	var got struct {
		Instances []map[string]string `json:"instances"`
	}
	require.NoError(t, json.Unmarshal([]byte(ans.body), &got))
	assert.Equal(t, []map[string]string{{"instance": "a"}, {"instance": "b"}}, got.Instances)
	assert.Equal(t, http.StatusMethodNotAllowed, a.do("PUT", "/cluster", "{}").status)

	fail = errors.New("etcd is unreachable")
	ans = a.do("GET", "/cluster", "")
	assert.Equal(t, http.StatusServiceUnavailable, ans.status)
	assert.Equal(t, CodeClusterUnreachable, errorCode(t, ans))
	assert.Contains(t, ans.body, "etcd is unreachable")
}

// TestHealthzEngines: an engine down leaves /healthz 200 while a config
// serves, and the body says which and since when.
func TestHealthzEngines(t *testing.T) {
	since := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	a := newAPI(t, Config{Engines: func() []Engine {
		return []Engine{{Name: "etcd", Reachable: false, Since: since, Error: "context deadline exceeded"}, {Name: "redis", Reachable: true}}
	}})
	ans := a.do("GET", "/healthz", "")
	assert.Equal(t, http.StatusServiceUnavailable, ans.status, "nothing serves yet")
	_, err := a.pub.ApplyDataIf(testContext(t), []byte(fixedDoc("app.test", "one")), 0)
	require.NoError(t, err)
	ans = a.do("GET", "/healthz", "")
	require.Equal(t, http.StatusOK, ans.status, ans.body)
	var h Healthz
	require.NoError(t, json.Unmarshal([]byte(ans.body), &h))
	assert.Equal(t, "serving", h.Status)
	assert.Equal(t, []string{"etcd"}, h.Down)
	require.Len(t, h.Engines, 2)
	assert.Equal(t, since, h.Engines[0].Since)
	assert.Equal(t, "context deadline exceeded", h.Engines[0].Error)
	assert.Contains(t, ans.body, `"since": "2026-12-02T05:00:00Z"`)
}
