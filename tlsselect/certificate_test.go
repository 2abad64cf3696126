package tlsselect

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTableCertificate: a Table gives the certificates it loaded by ID,
// as clients toward upstreams present them; an ID it does not have, a
// pending certificate and a nil Table give nil, without allocating.
func TestTableCertificate(t *testing.T) {
	ca := newPKI(t, "root")
	good := ca.issue(t, leafOpts{names: []string{"a.test"}})
	tbl := mustTable(t, Config{Certificates: []Certificate{
		{ID: "edge", Source: source(good)},
		{ID: "later", Source: &staticSource{err: ErrPending}},
	}})
	ct := tbl.Certificate("edge")
	require.NotNil(t, ct)
	assert.Equal(t, good.Certificate, ct.Certificate)
	assert.Nil(t, tbl.Certificate("later"), "pending")
	assert.Nil(t, tbl.Certificate("nope"))
	assert.Nil(t, (*Table)(nil).Certificate("edge"))
	assert.Zero(t, testing.AllocsPerRun(100, func() { tbl.Certificate("edge") }))
}
