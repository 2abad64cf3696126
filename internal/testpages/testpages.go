package testpages

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Size is the length of every page, in bytes.
const Size = 16 << 10

// Varied returns Size bytes of HTML made of words drawn from a fixed
// seed: paragraphs of a few dozen distinct words in random order (a
// repeated string would compress far better than a real page).
func Varied() []byte {
	words := strings.Fields("the gateway routes each request by host and path to an upstream cluster " +
		"whose destinations are balanced by policy and checked for health while the snapshot " +
		"holds every decision so a publish never mixes generations of configuration")
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString("<!doctype html>\n<html><head><title>benchmark page</title></head><body>\n")
	for b.Len() < Size-64 {
		b.WriteString("<p class=\"c" + strconv.Itoa(r.IntN(8)) + "\">")
		for i := 0; i < 12+r.IntN(12); i++ {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		b.WriteString("</p>\n")
	}
	b.WriteString("</body></html>\n")
	out := []byte(b.String())
	for len(out) < Size {
		out = append(out, '\n')
	}
	return out[:Size]
}

// Repetitive returns Size bytes of HTML table rows of a catalogue, each
// row the same markup around a few numbers.
func Repetitive() []byte {
	var b strings.Builder
	for i := 0; b.Len() < Size; i++ {
		fmt.Fprintf(&b, "<tr><td class=\"n\">%d</td><td><a href=\"/items/%x\">Item %d of the catalogue</a></td><td>%d.%02d EUR</td></tr>\n",
			i, i*7919, i, i*37%500, i%100)
	}
	return []byte(b.String()[:Size])
}
