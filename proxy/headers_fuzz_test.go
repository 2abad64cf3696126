package proxy

// refASCIILower lowers A-Z and leaves every other byte alone: the case
// folding of RFC 9110 for field names, tokens and codings.
func refASCIILower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
