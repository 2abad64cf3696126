package gate

import "testing"

func TestCanonicalHostNameRefusesInvalidUTF8(t *testing.T) {
	for _, n := range []string{"0\xc30", "a.com\xff", "*.\xffb.com"} {
		_, _, err := CanonicalHostName(n)
		if err == nil {
			t.Errorf("CanonicalHostName(%q) accepted a name no client can send", n)
		}
	}
	// Valid Unicode still maps to its punycode form, which is stable.
	got, _, err := CanonicalHostName("Bücher.Example")
	if err != nil || got != "xn--bcher-kva.example" {
		t.Fatalf("got %q, %v", got, err)
	}
	if again, _, err := CanonicalHostName(got); err != nil || again != got {
		t.Fatalf("not stable: %q, %v", again, err)
	}
}
