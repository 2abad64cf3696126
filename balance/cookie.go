package balance

// cookieValue returns the value of the first valid cookie called name in
// the Cookie header lines, with the same rules as [net/http.Request.Cookie]
// (names are tokens, values may be double-quoted and hold only cookie-octets,
// space and comma), but without allocating. name must be a valid token.
func cookieValue(lines []string, name string) (string, bool) {
	count := 0
	for _, line := range lines {
		for i := 0; i < len(line); i++ {
			if line[i] == ';' {
				count++
			}
		}
		count++
	}
	if count > maxCookies {
		return "", false
	}
	for _, line := range lines {
		line = trimSpace(line)
		for len(line) > 0 {
			var part string
			if i := indexByte(line, ';'); i >= 0 {
				part, line = line[:i], line[i+1:]
			} else {
				part, line = line, ""
			}
			part = trimSpace(part)
			if part == "" {
				continue
			}
			n, v := part, ""
			if i := indexByte(part, '='); i >= 0 {
				n, v = part[:i], part[i+1:]
			}
			if trimSpace(n) != name {
				continue
			}
			if len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"' {
				v = v[1 : len(v)-1]
			}
			if !validCookieValue(v) {
				continue
			}
			return v, true
		}
	}
	return "", false
}

// maxCookies is net/http's default limit on the number of cookies in a
// request (GODEBUG httpcookiemaxnum); past it net/http sees no cookie.
const maxCookies = 3000

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

func trimSpace(s string) string {
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func validCookieValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < 0x20 || b >= 0x7f || b == '"' || b == ';' || b == '\\' {
			return false
		}
	}
	return true
}

// isToken reports whether s is a non-empty RFC 7230 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case indexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
