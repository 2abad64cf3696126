// Package promtest reads a Prometheus scrape in tests with the Prometheus
// project's own parser, and finds a series by its exact label set.
package promtest

import (
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// Scrape GETs url with c and parses the text format it answers.
func Scrape(t testing.TB, c *http.Client, url string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := c.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(res.Body)
	require.NoError(t, err)
	return fams
}

// Value returns the value of the series of name with exactly labels (name,
// value pairs, in any order): a counter's or a gauge's value, a
// histogram's sample count. It reports whether there is such a series.
func Value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
next:
	for _, m := range f.Metric {
		if len(m.Label) != len(want) {
			continue
		}
		for _, l := range m.Label {
			if want[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}
