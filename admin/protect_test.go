package admin

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProtect(t *testing.T) {
	a := newAPI(t, Config{Token: "tok"})
	h, err := New(Config{Publisher: a.pub, Token: "tok"})
	require.NoError(t, err)
	other := h.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "beside the API") }))
	b := &api{t: t, url: "http://" + httptestServer(t, other), c: a.c}
	for auth, code := range map[string]string{"": CodeTokenMissing, "Bearer nope": CodeTokenInvalid} {
		ans := b.do("GET", "/anything", "", "Authorization", auth)
		assert.Equal(t, 401, ans.status, auth)
		assert.Equal(t, code, errorCode(t, ans))
		assert.Contains(t, ans.header.Get("WWW-Authenticate"), "Bearer", auth)
	}
	ans := b.do("GET", "/anything", "", "Authorization", "Bearer tok")
	assert.Equal(t, 200, ans.status)
	assert.Equal(t, "beside the API", ans.body)
}
