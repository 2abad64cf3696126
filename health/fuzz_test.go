package health

import (
	"math"
	"math/big"
	"strings"
	"testing"
	"unicode"
)

// FuzzMetadataThresholds checks how a cluster's metadata strings become
// the active threshold and the passive rate limit against references
// written from their documentation: the threshold is a whole number of at
// least 1, the rate limit a decimal number in (0, 1), both with white
// space around them allowed. A value the reference refuses is an error at
// the metadata key's path; one it accepts is the value used.
func FuzzMetadataThresholds(f *testing.F) {
	for _, s := range [][2]string{
		{"3", "0.5"}, {" 4 ", "0.25 "}, {"+2", "+.5"}, {"0", "1"}, {"-1", "0"}, {"1.0", "5e-1"}, {"007", "0.3e0"},
		{"9223372036854775807", "0.9999999999999999"}, {"9223372036854775808", "0.99999999999999999"},
		{"", ""}, {"\u00a02\u2003", "\t0.5\n"}, {"2\x00", "0x1p-1"}, {"1_0", "0.5_0"}, {"٣", "1e-400"},
		{"1e1", "Inf"}, {"0x10", "NaN"}, {"2 2", "."}, {"+", "1e"}, {"--1", ".e1"}, {"1", "4.9e-324"},
	} {
		f.Add(s[0], s[1])
	}
	const (
		thresholdPath = "metadata[" + MetadataThreshold + "]"
		ratePath      = "metadata[" + MetadataRateLimit + "]"
	)
	f.Fuzz(func(t *testing.T, threshold, rate string) {
		s, errs, _ := resolve(Config{Metadata: map[string]string{MetadataThreshold: threshold, MetadataRateLimit: rate}}, nil)
		got := problems(t, errs)

		want := map[string]string{}
		n, nOK := refThreshold(threshold)
		if !nOK {
			want[thresholdPath] = "health.active.threshold.invalid"
		}
		r, rOK := refRate(rate)
		if !rOK {
			want[ratePath] = "health.passive.failureRate.invalid"
		}
		if len(got) != len(want) || got[thresholdPath] != want[thresholdPath] || got[ratePath] != want[ratePath] {
			t.Fatalf("threshold %q, rate %q: problems %v; the references: %v", threshold, rate, got, want)
		}
		if nOK && s.active.threshold != n {
			t.Fatalf("threshold %q reads as %d; the reference: %d", threshold, s.active.threshold, n)
		}
		if rOK && s.passive.rateLimit != r {
			t.Fatalf("rate %q reads as %v; the reference: %v", rate, s.passive.rateLimit, r)
		}
	})
}

// refThreshold reads a whole number of at least 1: an optional sign and
// ASCII digits, with Unicode white space around them.
func refThreshold(s string) (int, bool) {
	s = strings.TrimFunc(s, unicode.IsSpace)
	digits := strings.TrimLeft(s, "+-")
	if len(s)-len(digits) > 1 || digits == "" || !isDigits(digits) {
		return 0, false
	}
	v, _ := new(big.Int).SetString(s, 10)
	if v.Sign() < 1 || !v.IsInt64() || v.Int64() > math.MaxInt {
		return 0, false
	}
	return int(v.Int64()), true
}

// refRate reads a decimal number in (0, 1): an optional sign, digits with
// an optional point (at least one digit), an optional exponent, with
// Unicode white space around them. The number is rounded to the nearest
// float64, which must be in (0, 1).
func refRate(s string) (float64, bool) {
	s = strings.TrimFunc(s, unicode.IsSpace)
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 || strings.HasPrefix(s, "-") {
		return 0, false // negative or zero at best
	}
	mant, exp, hasExp := strings.Cut(strings.ToLower(body), "e")
	whole, frac, _ := strings.Cut(mant, ".")
	if !isDigits(whole+frac) || whole+frac == "" {
		return 0, false
	}
	e := 0
	if hasExp {
		digits := strings.TrimLeft(exp, "+-")
		if len(exp)-len(digits) > 1 || digits == "" || !isDigits(digits) {
			return 0, false
		}
		if digits = strings.TrimLeft(digits, "0"); len(digits) > 7 {
			digits = "9999999" // far out of range either way
		}
		for _, c := range []byte(digits) {
			e = e*10 + int(c-'0')
		}
		if exp[0] == '-' {
			e = -e
		}
	}
	sig := strings.TrimLeft(whole+frac, "0")
	e -= len(frac) // the value is sig * 10^e
	switch magnitude := len(sig) + e; {
	case sig == "", magnitude > 1, magnitude < -400:
		return 0, false // zero, at least 10, or below the smallest float64
	}
	v, _ := new(big.Rat).SetString(sig)
	scale := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(e, -e))), nil))
	if e >= 0 {
		v.Mul(v, scale)
	} else {
		v.Quo(v, scale)
	}
	f, _ := v.Float64()
	return f, f > 0 && f < 1
}

func isDigits(s string) bool { return strings.Trim(s, "0123456789") == "" }
