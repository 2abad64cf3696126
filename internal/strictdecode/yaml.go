package strictdecode

import (
	"bytes"
	"reflect"
	"strings"
	"unicode/utf8"
)

// yamlFast reads a YAML document into v, of plan p, or reports false when
// the document has a problem or a form it leaves to the general path. It
// reads block mappings and sequences indented with spaces, literal block
// scalars, and on one line each: plain, single- and double-quoted scalars
// and flow collections of them, with comments. It gives up on everything
// else: anchors, aliases, tags, folded and multi-line flow scalars,
// explicit keys, merge keys, document
// markers and directives, tabs, carriage returns, control characters and
// Unicode line breaks. Plain scalars are resolved as go.yaml.in/yaml/v2
// resolves them (YAML 1.1: yes and no are booleans, 0x1f an integer) and
// converted as sigs.k8s.io/yaml converts them for the target type (a
// number or boolean where a string is expected is its text); the values
// whose conversion differs from their text give up.
func yamlFast(data []byte, p *typePlan, v reflect.Value) bool {
	d := yamlDecoder{data: data, budget: valueBudget(len(data))}
	if !d.nextLine() || d.ind < 0 {
		return false
	}
	return d.mapping(p, v, d.ind) && d.ind == eof
}

// eof is the indentation at the end of the document.
const eof = -1

// yamlDecoder reads a document line by line: cur is the position being
// read on the current line, ind the current line's indentation.
type yamlDecoder struct {
	data   []byte
	cur    int
	ind    int
	buf    []byte // quoted scalars with escapes
	budget int    // bytes the lists may still take (valueBudget)
	strs   interned
}

// nextLine moves to the next line with content from cur (the start of a
// line), past empty and comment lines, and sets ind, or eof at the end. It
// reports false for a tab or carriage return in the indentation.
func (d *yamlDecoder) nextLine() bool {
	for d.cur < len(d.data) {
		i := d.cur
		for i < len(d.data) && d.data[i] == ' ' {
			i++
		}
		if i == len(d.data) {
			break
		}
		switch d.data[i] {
		case '\n':
			d.cur = i + 1
			continue
		case '#':
			j, ok := d.comment(i)
			if !ok {
				return false
			}
			d.cur = j + 1
			continue
		case '\t', '\r':
			return false
		}
		d.ind = i - d.cur
		d.cur = i
		return true
	}
	d.cur = len(d.data)
	d.ind = eof
	return true
}

// endLine reads what may follow a value on its line (spaces and a
// comment) and moves to the next line with content.
func (d *yamlDecoder) endLine() bool {
	i := d.cur
	for i < len(d.data) && d.data[i] == ' ' {
		i++
	}
	if i < len(d.data) && d.data[i] == '#' && i > d.cur {
		var ok bool
		if i, ok = d.comment(i); !ok {
			return false
		}
	}
	if i < len(d.data) && d.data[i] != '\n' {
		return false
	}
	d.cur = i + 1
	return d.nextLine()
}

// comment reads a comment from i to the end of its line, where it
// returns; it reports false for a character that YAML refuses or reads as
// a line break.
func (d *yamlDecoder) comment(i int) (int, bool) {
	for i < len(d.data) && d.data[i] != '\n' {
		n, ok := scalarChar(d.data[i:])
		if !ok {
			return i, false
		}
		i += n
	}
	return i, true
}

// dash reports whether the line's content at cur is a sequence entry.
func (d *yamlDecoder) dash() bool {
	i := d.cur
	return i < len(d.data) && d.data[i] == '-' && (i+1 == len(d.data) || d.data[i+1] == ' ' || d.data[i+1] == '\n')
}

// mapping reads a block mapping whose keys are at indentation ind; the
// first key is at cur.
func (d *yamlDecoder) mapping(p *typePlan, v reflect.Value, ind int) bool {
	key, ok := d.key()
	return ok && d.mappingFrom(p, v, ind, key)
}

// mappingFrom is mapping once its first key has been read.
func (d *yamlDecoder) mappingFrom(p *typePlan, v reflect.Value, ind int, key []byte) bool {
	p, v = deref(p, v)
	if p.unsupported || p.kind != reflect.Struct && p.kind != reflect.Map {
		return false
	}
	var seen uint64
	if p.kind == reflect.Map {
		v.Set(reflect.MakeMap(p.typ))
	}
	for first := true; ; first = false {
		if !first {
			var ok bool
			if key, ok = d.key(); !ok {
				return false
			}
		}
		m, ok := p.member(v, key, &seen)
		if !ok {
			return false
		}
		if null, ok := d.entryValue(m.plan, m.value, ind); !ok || !m.set(null) {
			return false
		}
		switch {
		case d.ind < ind:
			return true
		case d.ind > ind:
			return false
		}
	}
}

// entryValue reads the value of a mapping entry at indentation ind, after
// its key and colon, up to the next line with content. It reports whether
// the value was null (absent).
func (d *yamlDecoder) entryValue(p *typePlan, v reflect.Value, ind int) (null, ok bool) {
	if d.restOfLine() {
		switch {
		case !d.endLine():
			return false, false
		case d.ind < ind: // eof too
			return true, true
		case d.ind == ind:
			if !d.dash() {
				return true, true
			}
			return false, d.sequence(p, v, ind)
		}
		return false, d.block(p, v, d.ind)
	}
	null, ok = d.inline(p, v, ind)
	return null, ok && d.endLine() && d.ind <= ind
}

// restOfLine skips spaces and reports whether nothing but a comment is
// left on the line.
func (d *yamlDecoder) restOfLine() bool {
	i := d.cur
	for i < len(d.data) && d.data[i] == ' ' {
		i++
	}
	if i == len(d.data) || d.data[i] == '\n' || d.data[i] == '#' && i > d.cur {
		return true
	}
	d.cur = i
	return false
}

// block reads a block mapping or sequence at indentation ind, at cur.
func (d *yamlDecoder) block(p *typePlan, v reflect.Value, ind int) bool {
	if d.dash() {
		return d.sequence(p, v, ind)
	}
	return d.mapping(p, v, ind)
}

// sequence reads a block sequence whose dashes are at indentation ind; the
// first is at cur.
func (d *yamlDecoder) sequence(p *typePlan, v reflect.Value, ind int) bool {
	p, v = deref(p, v)
	if p.unsupported || p.kind != reflect.Slice {
		return false
	}
	v.Set(reflect.MakeSlice(p.typ, 0, 0))
	for {
		e, ok := growElem(p, v, func() int { return d.countEntries(ind) }, &d.budget)
		if !ok {
			return false
		}
		dash := d.cur
		d.cur++ // -
		switch {
		case d.restOfLine():
			if !d.endLine() {
				return false
			}
			if d.ind > ind && !d.block(p.elem, e, d.ind) {
				return false
			}
		case d.dash():
			return false // a sequence in a sequence entry
		case !d.entry(p.elem, e, ind, ind+d.cur-dash):
			return false
		}
		switch {
		case d.ind < ind:
			return true
		case d.ind > ind:
			return false
		case !d.dash():
			return true // the mapping this sequence is a value of goes on
		}
	}
}

// countEntries counts the entries of a block sequence at indentation ind
// from cur, an entry's dash (at the start of its line, ind before cur), to
// the sequence's end: a line at most ind deep that is not a dash ends it.
func (d *yamlDecoder) countEntries(ind int) int {
	data, n := d.data, 0
	for i := d.cur - ind; i < len(data); {
		j := i
		for j < len(data) && data[j] == ' ' {
			j++
		}
		if j == len(data) {
			break
		}
		switch c := data[j]; {
		case c == '\n' || c == '#' || j-i > ind:
		case j-i < ind || c != '-':
			return n
		default:
			n++
		}
		k := bytes.IndexByte(data[j:], '\n')
		if k < 0 {
			break
		}
		i = j + k + 1
	}
	return n
}

// entry reads what follows the dash of an entry of a sequence at
// indentation ind on the dash's line, from cur at column col: a block
// mapping (its first key read once) or an inline value.
func (d *yamlDecoder) entry(p *typePlan, v reflect.Value, ind, col int) bool {
	start := d.cur
	if key, ok := d.key(); ok {
		return d.mappingFrom(p, v, col, key)
	}
	d.cur = start
	_, ok := d.inline(p, v, ind)
	return ok && d.endLine() && d.ind <= ind
}

// key reads a mapping key and its colon, followed by a space or the end
// of the line: a quoted scalar or a plain one that resolves to a string.
func (d *yamlDecoder) key() ([]byte, bool) {
	if d.cur >= len(d.data) {
		return nil, false
	}
	var key []byte
	switch d.data[d.cur] {
	case '"', '\'':
		var ok bool
		if key, ok = d.quoted(); !ok {
			return nil, false
		}
	default:
		start := d.cur
		for i := start; ; i++ {
			if i == len(d.data) || d.data[i] == '\n' {
				return nil, false
			}
			c := d.data[i]
			if c == ':' && (i+1 == len(d.data) || d.data[i+1] == ' ' || d.data[i+1] == '\n') {
				key, d.cur = d.data[start:i], i
				break
			}
			if c <= ' ' || c >= 0x7f {
				return nil, false // spaces in a key, and non-ASCII keys, are left out
			}
		}
		if len(key) == 0 || plainIndicator(key[0]) || len(key) > 1024 {
			return nil, false
		}
		if k, _ := resolvePlain(key); k != yamlString {
			return nil, false
		}
	}
	if d.cur >= len(d.data) || d.data[d.cur] != ':' {
		return nil, false
	}
	d.cur++
	if d.cur < len(d.data) && d.data[d.cur] != ' ' && d.data[d.cur] != '\n' {
		return nil, false
	}
	return key, true
}

// plainIndicator reports whether c cannot start a plain scalar (or is
// left out: "-", "?" and ":" start one when a character other than a space
// follows).
// negativeNumber reports whether b starts with "-" and a digit: a plain
// scalar (a route's order: -1), not a sequence entry.
func negativeNumber(b []byte) bool {
	return len(b) > 1 && b[0] == '-' && '0' <= b[1] && b[1] <= '9'
}

func plainIndicator(c byte) bool {
	return strings.IndexByte("-?:,[]{}#&*!|>'\"%@`", c) >= 0
}

// inline reads a value that starts on the current line at cur, of a
// node at indentation ind: a scalar or a flow collection.
func (d *yamlDecoder) inline(p *typePlan, v reflect.Value, ind int) (null, ok bool) {
	switch d.data[d.cur] {
	case '[', '{':
		return false, d.flow(p, v)
	case '"', '\'':
		s, ok := d.quoted()
		return false, ok && setQuoted(p, v, d.strs.str(s))
	case '|':
		s, ok := d.literal(ind)
		return false, ok && setQuoted(p, v, d.strs.str(s))
	}
	start := d.cur
	end, ok := d.plain(false, false)
	if !ok {
		return false, false
	}
	return bindPlain(p, v, d.data[start:end], &d.strs)
}

// plain reads a plain scalar at cur, in a flow collection or not, and
// returns where its text ends (trailing spaces taken off). A key in a
// flow mapping ends at ": ".
func (d *yamlDecoder) plain(flow, key bool) (int, bool) {
	if d.cur == len(d.data) || plainIndicator(d.data[d.cur]) && !negativeNumber(d.data[d.cur:]) {
		return 0, false
	}
	i, end := d.cur, d.cur
	for i < len(d.data) {
		c := d.data[i]
		switch {
		case c == '\n':
		case c == ' ':
			if i+1 < len(d.data) && d.data[i+1] == '#' {
				break
			}
			i++
			continue
		case c == ':' && (i+1 == len(d.data) || d.data[i+1] == ' ' || d.data[i+1] == '\n'):
			if !key {
				return 0, false // a key where a value is
			}
		case flow && (c == ',' || c == ']' || c == '}'):
		case flow && c == ':' && strings.IndexByte(",[]{}?#", d.data[i+1]) >= 0,
			flow && (c == '?' || c == '#' || c == '[' || c == '{'):
			return 0, false
		case c > ' ' && c < 0x7f:
			i++
			end = i
			continue
		default:
			n, ok := scalarChar(d.data[i:])
			if !ok {
				return 0, false
			}
			i += n
			end = i
			continue
		}
		break
	}
	d.cur = end
	return end, true
}

// scalarChar returns the length of the character at the start of b, and
// false for a character the fast path leaves out: control characters and
// those YAML 1.1 reads as line breaks or a byte-order mark.
func scalarChar(b []byte) (int, bool) {
	if c := b[0]; c < utf8.RuneSelf {
		return 1, c >= ' ' && c < 0x7f
	}
	r, n := utf8.DecodeRune(b)
	if r == utf8.RuneError && n == 1 {
		return n, false // not UTF-8
	}
	ok := r >= 0xa0 && r <= 0xd7ff && r != 0x2028 && r != 0x2029 ||
		r >= 0xe000 && r <= 0xfffd && r != 0xfeff || r >= 0x10000 && r <= 0x10ffff
	return n, ok
}

// quoted reads a single- or double-quoted scalar on one line and returns
// its value, valid until the next call. Of the double-quoted escapes it
// reads \\, \", \n and \t; the others give up.
func (d *yamlDecoder) quoted() ([]byte, bool) {
	q := d.data[d.cur]
	d.buf = d.buf[:0]
	for i := d.cur + 1; i < len(d.data); {
		c := d.data[i]
		switch {
		case c == q && q == '\'' && i+1 < len(d.data) && d.data[i+1] == '\'':
			d.buf = append(d.buf, '\'')
			i += 2
			continue
		case c == q:
			d.cur = i + 1
			return d.buf, true
		case c == '\\' && q == '"':
			if i+1 >= len(d.data) {
				return nil, false
			}
			e := d.data[i+1]
			switch e {
			case '\\', '"':
			case 'n':
				e = '\n'
			case 't':
				e = '\t'
			default:
				return nil, false
			}
			d.buf = append(d.buf, e)
			i += 2
			continue
		}
		n, ok := scalarChar(d.data[i:])
		if !ok {
			return nil, false // a line break among them
		}
		d.buf = append(d.buf, d.data[i:i+n]...)
		i += n
	}
	return nil, false
}

// literal reads a literal block scalar, "|" (one line break kept at the
// end) or "|-" (none), the value of a node at indentation ind, and leaves
// cur at the end of its last line. Its value is valid until the next call.
// It leaves out explicit indentation, "|+", empty lines before the first
// one with content, lines of spaces past the indentation, and a last line
// without a line break.
func (d *yamlDecoder) literal(ind int) ([]byte, bool) {
	i := d.cur + 1
	strip := i < len(d.data) && d.data[i] == '-'
	if strip {
		i++
	}
	j := i
	for j < len(d.data) && d.data[j] == ' ' {
		j++
	}
	if j < len(d.data) && d.data[j] == '#' && j > i {
		var ok bool
		if j, ok = d.comment(j); !ok {
			return nil, false
		}
	}
	if j == len(d.data) || d.data[j] != '\n' {
		return nil, false
	}
	d.buf = d.buf[:0]
	m, lines, empty, last := -1, 0, 0, j
	for pos := j + 1; pos < len(d.data); {
		e := bytes.IndexByte(d.data[pos:], '\n')
		if e < 0 {
			return nil, false
		}
		line := d.data[pos : pos+e]
		sp := 0
		for sp < len(line) && line[sp] == ' ' {
			sp++
		}
		switch {
		case sp == len(line) && (m < 0 || sp > m):
			return nil, false
		case sp == len(line):
			empty++
		case m < 0 && sp <= ind:
			return nil, false
		case m >= 0 && sp < m:
			pos = len(d.data) // the scalar ends before this line
			continue
		default:
			if m < 0 {
				m = sp
			}
			if lines > 0 {
				d.buf = append(d.buf, '\n')
			}
			for ; empty > 0; empty-- {
				d.buf = append(d.buf, '\n')
			}
			for k := m; k < len(line); {
				n, ok := scalarChar(line[k:])
				if !ok {
					return nil, false
				}
				d.buf = append(d.buf, line[k:k+n]...)
				k += n
			}
			lines++
		}
		last = pos + e
		pos = last + 1
	}
	if lines == 0 {
		return nil, false
	}
	if !strip {
		d.buf = append(d.buf, '\n')
	}
	d.cur = last
	return d.buf, true
}

// flow reads a flow sequence or mapping on the current line.
func (d *yamlDecoder) flow(p *typePlan, v reflect.Value) bool {
	open := d.data[d.cur]
	d.cur++
	p, v = deref(p, v)
	if p.unsupported {
		return false
	}
	var seen uint64
	switch {
	case open == '[' && p.kind == reflect.Slice:
		v.Set(reflect.MakeSlice(p.typ, 0, 0))
	case open == '{' && p.kind == reflect.Map:
		v.Set(reflect.MakeMap(p.typ))
	case open == '{' && p.kind == reflect.Struct:
	default:
		return false
	}
	closing := byte(']')
	if open == '{' {
		closing = '}'
	}
	d.spaces()
	if d.at(closing) {
		d.cur++
		return true
	}
	for {
		if open == '[' {
			e, ok := growElem(p, v, func() int { return 1 }, &d.budget)
			if !ok || !d.flowValue(p.elem, e) {
				return false
			}
		} else if !d.flowEntry(p, v, &seen) {
			return false
		}
		d.spaces()
		switch {
		case d.at(closing):
			d.cur++
			return true
		case !d.at(','):
			return false
		}
		d.cur++
		d.spaces()
		if d.at(closing) || d.at(',') {
			return false // an empty entry
		}
	}
}

// flowEntry reads "key: value" in a flow mapping.
func (d *yamlDecoder) flowEntry(p *typePlan, v reflect.Value, seen *uint64) bool {
	var key []byte
	if d.at('"') || d.at('\'') {
		k, ok := d.quoted()
		if !ok {
			return false
		}
		key = k
	} else {
		start := d.cur
		end, ok := d.plain(true, true)
		if !ok || end == start {
			return false
		}
		key = d.data[start:end]
		if k, _ := resolvePlain(key); k != yamlString {
			return false
		}
	}
	if !d.at(':') || d.cur+1 >= len(d.data) || d.data[d.cur+1] != ' ' {
		return false
	}
	d.cur += 2
	d.spaces()
	m, ok := p.member(v, key, seen)
	return ok && d.flowValue(m.plan, m.value) && m.set(false)
}

// flowValue reads a value in a flow collection; a null one gives up.
func (d *yamlDecoder) flowValue(p *typePlan, v reflect.Value) bool {
	if d.cur >= len(d.data) {
		return false
	}
	switch d.data[d.cur] {
	case '[', '{':
		return d.flow(p, v)
	case '"', '\'':
		s, ok := d.quoted()
		return ok && setQuoted(p, v, d.strs.str(s))
	}
	start := d.cur
	end, ok := d.plain(true, false)
	if !ok {
		return false
	}
	null, ok := bindPlain(p, v, d.data[start:end], &d.strs)
	return ok && !null
}

func (d *yamlDecoder) spaces() {
	for d.cur < len(d.data) && d.data[d.cur] == ' ' {
		d.cur++
	}
}

func (d *yamlDecoder) at(c byte) bool {
	return d.cur < len(d.data) && d.data[d.cur] == c
}
