package pct

// Equal reports whether raw, a query component as sent, equals want once
// percent-decoded, with "+" read as a space (the form encoding every
// query parser applies). A malformed escape equals nothing.
func Equal(raw, want string) bool {
	j := 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch c {
		case '+':
			c = ' '
		case '%':
			if i+2 >= len(raw) || !IsHex(raw[i+1]) || !IsHex(raw[i+2]) {
				return false
			}
			c = Unhex(raw[i+1])<<4 | Unhex(raw[i+2])
			i += 2
		}
		if j == len(want) || want[j] != c {
			return false
		}
		j++
	}
	return j == len(want)
}

// IsHex reports whether c is a hexadecimal digit, in either case.
func IsHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// Unhex returns the value of the hexadecimal digit c (IsHex(c) holds).
func Unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
