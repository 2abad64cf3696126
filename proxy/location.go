package proxy

import "strings"

// mapLocation gives an upstream's Location the client's prefix back on a
// rewriting route. It reports false when loc is to be left alone.
//
//   - A path-absolute Location under what the route sends (the added
//     prefix, or anything on a strip-only route) is mapped under the
//     client's prefix: with strip /app and add /api, /api/login becomes
//     /app/login. One that already starts with the client's prefix (an app
//     that reads X-Forwarded-Prefix) is left alone, and so is one outside
//     the added prefix.
//   - An absolute http(s) URL on the request's own Host gets the same path
//     mapping. One on the name the upstream was sent (a custom or
//     destination Host), on a stripping route, is the upstream talking
//     about itself: it gets the client's scheme and Host, and its path is
//     mapped.
//   - Anything else (another host, //cdn/x, /\cdn/x, a relative
//     reference, a path with a tab or a line break) is left alone. Scheme
//     and host compare without case; the added prefix compares exactly.
//
// It allocates only the string it returns.
func (rw *rewriter) mapLocation(loc, reqHost, sentHost, clientScheme string) (string, bool) {
	if !rw.active || !rw.location || loc == "" {
		return "", false
	}
	if loc[0] == '/' {
		if len(loc) > 1 && (loc[1] == '/' || loc[1] == '\\') {
			return "", false
		}
		return rw.mapPath(loc)
	}
	var rest string
	switch {
	case len(loc) > 7 && strings.EqualFold(loc[:7], "http://"):
		rest = loc[7:]
	case len(loc) > 8 && strings.EqualFold(loc[:8], "https://"):
		rest = loc[8:]
	default:
		return "", false
	}
	end := strings.IndexAny(rest, "/?#\\")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if strings.HasPrefix(tail, "\\") {
		return "", false
	}
	if strings.EqualFold(authority, reqHost) {
		if tail == "" || tail[0] != '/' {
			return "", false
		}
		p, ok := rw.mapPath(tail)
		if !ok {
			return "", false
		}
		return loc[:len(loc)-len(rest)] + authority + p, true
	}
	if rw.strip == "" || sentHost == "" || !strings.EqualFold(authority, sentHost) {
		return "", false
	}
	if tail == "" || tail[0] != '/' {
		tail = "/" + tail
	}
	if p, ok := rw.mapPath(tail); ok {
		tail = p
	}
	return clientScheme + "://" + reqHost + tail, true
}

// mapPath maps a path-absolute reference (with its query and fragment)
// from the upstream's view to the client's.
func (rw *rewriter) mapPath(loc string) (string, bool) {
	path, tail := loc, ""
	if i := strings.IndexAny(loc, "?#"); i >= 0 {
		path, tail = loc[:i], loc[i:]
	}
	if strings.ContainsAny(path, "\t\n\r") {
		// Browsers drop these before they read a URL, so what is left
		// after the prefix could turn protocol-relative: leave it alone.
		return "", false
	}
	if rw.strip != "" && prefixLen(path, rw.strip) >= 0 {
		return "", false
	}
	rest := path
	if rw.add != "" {
		// The upstream's paths are its own: /Api is not under /api.
		if !strings.HasPrefix(path, rw.add) || (len(path) > len(rw.add) && path[len(rw.add)] != '/') {
			return "", false
		}
		rest = path[len(rw.add):]
	}
	out := rw.strip + rest
	if out == "" {
		out = "/"
	}
	if out == path || strings.HasPrefix(out, "//") || strings.HasPrefix(out, "/\\") {
		// Unchanged, or what is left after the prefix would turn the
		// reference protocol-relative (an open redirect): leave it alone.
		return "", false
	}
	return out + tail, true
}
