package gate

import "strings"

// CanonicalPath returns the path view routes and rules match on: empty
// segments dropped (//a is /a), ";params" removed from each segment
// (/a;v=1/b is /a/b), "." and ".." resolved without climbing above the
// root, a trailing slash kept. The input is the decoded path
// (r.URL.Path). A path that is already canonical is returned as is,
// without allocation; anything else costs one string.
func CanonicalPath(p string) string {
	if isCanonicalPath(p) {
		return p
	}
	segs := make([]string, 0, 8)
	trailing := false
	for rest := p; ; {
		i := strings.IndexByte(rest, '/')
		seg := rest
		if i >= 0 {
			seg = rest[:i]
		}
		if j := strings.IndexByte(seg, ';'); j >= 0 {
			seg = seg[:j]
		}
		trailing = false
		switch seg {
		case "":
			trailing = true
		case ".":
			trailing = true
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
			trailing = true
		default:
			segs = append(segs, seg)
		}
		if i < 0 {
			break
		}
		rest = rest[i+1:]
	}
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(s)
	}
	if trailing || len(segs) == 0 {
		b.WriteByte('/')
	}
	return b.String()
}

// isCanonicalPath reports whether p starts with "/" and has no empty,
// ".", ".." segment (except a trailing slash) and no ';'.
func isCanonicalPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case ';':
			return false
		case '/':
			rest := p[i+1:]
			if len(rest) > 0 && rest[0] == '/' {
				return false
			}
			if rest == "." || rest == ".." || strings.HasPrefix(rest, "./") || strings.HasPrefix(rest, "../") {
				return false
			}
		}
	}
	return true
}
