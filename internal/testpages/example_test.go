package testpages_test

import (
	"fmt"

	"github.com/paduraksa/paduraksa/internal/testpages"
)

func ExampleRepetitive() {
	p := testpages.Repetitive()
	fmt.Println(len(p))
	fmt.Printf("%s", p[:102])
	// Output:
	// 16384
	// <tr><td class="n">0</td><td><a href="/items/0">Item 0 of the catalogue</a></td><td>0.00 EUR</td></tr>
}
