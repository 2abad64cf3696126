package pct_test

import (
	"fmt"

	"github.com/paduraksa/paduraksa/internal/pct"
)

func ExampleEqual() {
	fmt.Println(pct.Equal("caf%C3%A9+au+lait", "café au lait"))
	fmt.Println(pct.Equal("%zz", "%zz"))
	// Output:
	// true
	// false
}
