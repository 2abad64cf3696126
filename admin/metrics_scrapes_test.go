package admin_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/admin"
)

// TestScrapesRenderAtMostMaxScrapesAtOnce: while MaxScrapes scrapes are
// rendering (held inside the collection), one more is answered 503 with
// Retry-After at once; once they end, a scrape renders again.
func TestScrapesRenderAtMostMaxScrapesAtOnce(t *testing.T) {
	rendering, release := make(chan struct{}, 8), make(chan struct{})
	m := admin.NewMetrics(admin.MetricsConfig{Engines: func() []admin.Engine {
		rendering <- struct{}{}
		<-release
		return nil
	}})
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the server closes, which waits for the renders
	client := &http.Client{Timeout: 10 * time.Second}
	scrape := func() (*http.Response, error) {
		res, err := client.Get(srv.URL)
		if err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		return res, err
	}

	held := make(chan int, admin.MaxScrapes)
	for range admin.MaxScrapes {
		go func() {
			res, err := scrape()
			if err != nil {
				held <- 0
				return
			}
			held <- res.StatusCode
		}()
		<-rendering
	}
	res, err := scrape()
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	assert.Equal(t, "1", res.Header.Get("Retry-After"))

	free()
	for range admin.MaxScrapes {
		assert.Equal(t, http.StatusOK, <-held)
	}
	res, err = scrape()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, res.StatusCode, "the renders ended")
}
