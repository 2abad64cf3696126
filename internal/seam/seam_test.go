package seam

import "testing"

func TestOnlyOpenOpens(t *testing.T) {
	if !Open().Opens() {
		t.Fatal("the key Open returns does not open")
	}
	if (Key{}).Opens() {
		t.Fatal("the zero key opens")
	}
}
