package enum

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

type color uint8

func TestNames(t *testing.T) {
	names := Names[color]{"red", "green"}
	assert.Equal(t, "red", names.Name(0))
	assert.Equal(t, "green", names.Name(1))
	assert.Equal(t, "invalid(7)", names.Name(7))
	v, ok := names.Parse("green")
	assert.True(t, ok)
	assert.Equal(t, color(1), v)
	_, ok = names.Parse("Green")
	assert.False(t, ok, "case-sensitive")
	assert.True(t, names.Known(1))
	assert.False(t, names.Known(2))
	assert.Equal(t, "red, green", names.List())
}
