package redact_test

import (
	"fmt"
	"net/http"

	"github.com/paduraksa/paduraksa/internal/redact"
)

func ExampleHeader() {
	h := http.Header{"Authorization": {"Bearer s3cret"}, "X-Api-Key": {"k1"}, "Accept": {"*/*"}}
	shown := redact.Header(h)
	fmt.Println(shown.Get("Authorization"), shown.Get("X-Api-Key"), shown.Get("Accept"))
	fmt.Println(h.Get("Authorization"))
	fmt.Println(redact.Name("X-Keyboard"), redact.Name("Set-Cookie"))
	// Output:
	// (redacted) (redacted) */*
	// Bearer s3cret
	// false true
}
