package gate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChallengeStore(t *testing.T) {
	var s ChallengeStore
	assert.Nil(t, s.lookup("a"))
	assert.Nil(t, (*ChallengeStore)(nil).lookup("a"), "a gate without a store")
	s.Set("a", "a.key")
	s.Set("b", "b.key")
	assert.Equal(t, 2, s.Len())
	p := s.lookup("a")
	require.NotNil(t, p)
	assert.Equal(t, 200, p.status)
	assert.Equal(t, "a.key", string(p.body))
	s.Delete("a")
	assert.Nil(t, s.lookup("a"))
	assert.NotNil(t, s.lookup("b"))
	assert.Equal(t, 1, s.Len())
	assert.Zero(t, testing.AllocsPerRun(100, func() { s.lookup("b") }))
}
