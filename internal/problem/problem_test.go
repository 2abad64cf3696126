package problem

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestErrorText(t *testing.T) {
	assert.Equal(t, "passive.window: too short (health.passive.window.invalid)",
		(&Error{Code: "health.passive.window.invalid", Path: "passive.window", Msg: "too short"}).Error())
	assert.Equal(t, "empty document (document.empty)", (&Error{Code: "document.empty", Msg: "empty document"}).Error())
}

func TestJoinAndIndex(t *testing.T) {
	for _, tc := range []struct{ prefix, path, want string }{
		{"upstreams[2].health", "passive.window", "upstreams[2].health.passive.window"},
		{"upstreams[2]", "", "upstreams[2]"},
		{"", "passive.window", "passive.window"},
		{"hosts", "[3].names[0]", "hosts[3].names[0]"},
		{"upstreams[0]", `metadata["zone"]`, `upstreams[0].metadata["zone"]`},
		{"", "", ""},
	} {
		assert.Equal(t, tc.want, Join(tc.prefix, tc.path), "%q %q", tc.prefix, tc.path)
	}
	assert.Equal(t, "hosts[12]", Index("hosts", 12))
}

func TestUnderKeepsCodesAndPrefixesPaths(t *testing.T) {
	var inner List
	inner.Add("balance.policy.unknown", "policy", "unknown policy")
	inner.Add("balance.slowStart.invalid", "slowStart", "negative")
	custom := errors.New("factory failed")

	var l List
	l.Under("upstreams[1]", "other.code", errors.Join(inner.Err(), fmt.Errorf("wrapped: %w", inner[0]), custom))
	l.Under("x", "other.code", nil)
	got := make([]string, len(l))
	for i, p := range l {
		got[i] = p.Code + " " + p.Path + " " + p.Msg
	}
	assert.Equal(t, []string{
		"balance.policy.unknown upstreams[1].policy unknown policy",
		"balance.slowStart.invalid upstreams[1].slowStart negative",
		"balance.policy.unknown upstreams[1].policy unknown policy",
		"other.code upstreams[1] factory failed",
	}, got)
	assert.Equal(t, "policy", inner[0].Path, "Under copies: the package's problem is not modified")

	var top List
	top.Under("", "other.code", inner[1])
	assert.Same(t, inner[1], top[0], "no prefix, no copy")
}

func TestAllAndErr(t *testing.T) {
	var l List
	assert.NoError(t, l.Err())
	assert.Nil(t, All(nil))
	assert.Nil(t, All(errors.New("plain")))
	l.Add("a", "p", "m1")
	l.Add("b", "", "m2")
	err := l.Err()
	assert.Equal(t, []*Error(l), All(err))
	assert.Equal(t, []*Error(l), All(fmt.Errorf("publish: %w", err)))
	assert.Equal(t, []*Error(l), All(errors.Join(errors.New("x"), err)))
	var p *Error
	assert.True(t, errors.As(err, &p))
	assert.Equal(t, "a", p.Code)
}

func TestCodePaths(t *testing.T) {
	var l List
	l.Add("a.b", "x[1]", "m")
	l.Add("c", "", "m")
	assert.Equal(t, []string{"a.b x[1]", "c ", "not a problem: plain"}, CodePaths(errors.Join(l.Err(), errors.New("plain"))))
	assert.Nil(t, CodePaths(nil))
}
