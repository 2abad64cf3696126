package strictdecode

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"reflect"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonFast reads a JSON document (RFC 8259) into v, of plan p, or reports
// false when the document has a problem or a form it leaves to the
// general path: invalid UTF-8 and unpaired surrogates in strings (which
// encoding/json replaces).
func jsonFast(data []byte, p *typePlan, v reflect.Value) bool {
	d := jsonDecoder{data: data, budget: valueBudget(len(data))}
	d.space()
	if d.pos >= len(d.data) || d.data[d.pos] != '{' {
		return false
	}
	if !d.value(p, v) {
		return false
	}
	d.space()
	return d.pos == len(d.data)
}

type jsonDecoder struct {
	data   []byte
	pos    int
	buf    []byte // unescaped strings
	budget int    // bytes the lists may still take (valueBudget)
	strs   interned
}

func (d *jsonDecoder) space() { d.pos = skipSpace(d.data, d.pos) }

// skipSpace returns the index of the first byte from i on that is not
// JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\t' || data[i] == '\r') {
		i++
	}
	return i
}

// next skips white space and reports whether the next byte is c, which it
// then consumes.
func (d *jsonDecoder) next(c byte) bool {
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == c {
		d.pos++
		return true
	}
	return false
}

func (d *jsonDecoder) at(c byte) bool {
	return d.pos < len(d.data) && d.data[d.pos] == c
}

func (d *jsonDecoder) literal(lit string) bool {
	if len(d.data)-d.pos >= len(lit) && string(d.data[d.pos:d.pos+len(lit)]) == lit {
		d.pos += len(lit)
		return true
	}
	return false
}

// value reads one value into v, of plan p. A null leaves v as it is.
func (d *jsonDecoder) value(p *typePlan, v reflect.Value) bool {
	d.space()
	if d.pos >= len(d.data) {
		return false
	}
	c := d.data[d.pos]
	if c == 'n' {
		return d.literal("null")
	}
	p, v = deref(p, v)
	if p.unsupported {
		return false
	}
	switch p.kind {
	case reflect.Struct, reflect.Map:
		return c == '{' && d.object(p, v)
	case reflect.Slice:
		return c == '[' && d.array(p, v)
	case reflect.String:
		s, ok := d.str()
		if ok {
			v.SetString(d.strs.str(s))
		}
		return ok
	case reflect.Bool:
		switch {
		case d.literal("true"):
			v.SetBool(true)
		case d.literal("false"):
			v.SetBool(false)
		default:
			return false
		}
		return true
	case reflect.Float32, reflect.Float64:
		n, ok := d.number()
		return ok && setFloat(p, v, string(n))
	}
	n, ok := d.number()
	return ok && setInt(p, v, n)
}

// object reads an object into struct or map v, of plan p.
func (d *jsonDecoder) object(p *typePlan, v reflect.Value) bool {
	d.pos++ // {
	if p.kind == reflect.Map {
		v.Set(reflect.MakeMap(p.typ))
	}
	if d.next('}') {
		return true
	}
	var seen uint64
	for {
		d.space()
		key, ok := d.str()
		if !ok || !d.next(':') {
			return false
		}
		m, ok := p.member(v, key, &seen)
		if !ok {
			return false
		}
		d.space()
		null := d.at('n')
		if !d.value(m.plan, m.value) || !m.set(null) {
			return false
		}
		if d.next('}') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

func (d *jsonDecoder) array(p *typePlan, v reflect.Value) bool {
	d.pos++ // [
	v.Set(reflect.MakeSlice(p.typ, 0, 0))
	if d.next(']') {
		return true
	}
	for {
		e, ok := growElem(p, v, func() int { return d.countElems(p) }, &d.budget)
		if !ok || !d.value(p.elem, e) {
			return false
		}
		if d.next(']') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

// countElems counts the elements of an array of plan p from pos, an
// element's start, to the array's end: a hint of how many to allocate.
// After the first, only elements that begin as a value of p's elements
// can begin are counted, so that a run of commas or of mistyped values
// does not allocate more than the values in the document would.
func (d *jsonDecoder) countElems(p *typePlan) int {
	data, want := d.data, startByte(p.elem)
	n, depth := 1, 0
	for i := d.pos; i < len(data); i++ {
		c := data[i]
		if countClass[c] == 0 {
			continue // names, numbers, colons and line breaks
		}
		switch c {
		case ' ':
			i = lastSpace(data, i)
		case '"':
			// The string ends at the first quote not escaped: after an
			// even number of backslashes.
			for {
				j := bytes.IndexByte(data[i+1:], '"')
				if j < 0 {
					return n
				}
				i += 1 + j
				if data[i-1] != '\\' || !escaped(data, i) {
					break
				}
			}
		case '[', '{':
			depth++
		case ']', '}':
			if depth == 0 {
				return n
			}
			depth--
		case ',':
			if depth == 0 {
				if j := skipSpace(data, i+1); j < len(data) && (want == 0 || data[j] == want) {
					n++
				}
			}
		}
	}
	return n
}

// lastSpace returns the index of the last of the spaces from data[i], a
// space, on: indentation is read eight bytes at a time.
func lastSpace(data []byte, i int) int {
	for ; i+9 <= len(data); i += 8 {
		if x := binary.LittleEndian.Uint64(data[i+1:]) ^ 0x2020202020202020; x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for i+1 < len(data) && data[i+1] == ' ' {
		i++
	}
	return i
}

// countClass is 1 for the bytes countElems stops at.
var countClass = [256]byte{' ': 1, '"': 1, '[': 1, '{': 1, ']': 1, '}': 1, ',': 1}

// startByte is the first byte of a JSON value of plan p that is not null,
// or 0 for a number.
func startByte(p *typePlan) byte {
	for p.kind == reflect.Pointer {
		p = p.elem
	}
	switch p.kind {
	case reflect.Struct, reflect.Map:
		return '{'
	case reflect.Slice:
		return '['
	case reflect.String:
		return '"'
	}
	return 0
}

// escaped reports whether the quote at data[i] is escaped: preceded by an
// odd number of backslashes.
func escaped(data []byte, i int) bool {
	n := 0
	for i--; i >= 0 && data[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// str reads a string and returns its value, which is d.data or d.buf and
// valid until the next call.
func (d *jsonDecoder) str() ([]byte, bool) {
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return nil, false
	}
	start := d.pos + 1
	i := start
	for i < len(d.data) {
		c := d.data[i]
		if strStop[c] == 0 {
			i++
			continue
		}
		switch {
		case c == '"':
			d.pos = i + 1
			return d.data[start:i], true
		case c == '\\' || c >= utf8.RuneSelf:
			return d.strSlow(start)
		}
		return nil, false // a control character
	}
	return nil, false
}

// strStop is 1 for the bytes that end the plain run of a string: the
// quote, a backslash, control characters and the bytes of non-ASCII text.
var strStop = func() (t [256]byte) {
	for c := range t {
		if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			t[c] = 1
		}
	}
	return t
}()

// strSlow reads a string with escapes or non-ASCII text from start, just
// after its opening quote.
func (d *jsonDecoder) strSlow(start int) ([]byte, bool) {
	d.buf = d.buf[:0]
	for i := start; i < len(d.data); {
		c := d.data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return d.buf, true
		case c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(d.data[i:])
			if r == utf8.RuneError && size == 1 {
				return nil, false
			}
			d.buf = append(d.buf, d.data[i:i+size]...)
			i += size
			continue
		case c != '\\':
			d.buf = append(d.buf, c)
			i++
			continue
		}
		if i+1 >= len(d.data) {
			return nil, false
		}
		esc := d.data[i+1]
		i += 2
		switch esc {
		case '"', '\\', '/':
			d.buf = append(d.buf, esc)
		case 'b':
			d.buf = append(d.buf, '\b')
		case 'f':
			d.buf = append(d.buf, '\f')
		case 'n':
			d.buf = append(d.buf, '\n')
		case 'r':
			d.buf = append(d.buf, '\r')
		case 't':
			d.buf = append(d.buf, '\t')
		case 'u':
			r, ok := hex4(d.data[i:])
			if !ok {
				return nil, false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if len(d.data)-i >= 6 && d.data[i] == '\\' && d.data[i+1] == 'u' {
					r2, ok = hex4(d.data[i+2:])
				}
				if r = utf16.DecodeRune(r, r2); !ok || r == utf8.RuneError {
					return nil, false // unpaired: encoding/json replaces it
				}
				i += 6
			}
			d.buf = utf8.AppendRune(d.buf, r)
		default:
			return nil, false
		}
	}
	return nil, false
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(n), err == nil
}

// number reads a number as RFC 8259 spells it and returns its text.
func (d *jsonDecoder) number() ([]byte, bool) {
	start, i := d.pos, d.pos
	digits := func() bool {
		j := i
		for i < len(d.data) && '0' <= d.data[i] && d.data[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(d.data) && d.data[i] == '-' {
		i++
	}
	switch {
	case i < len(d.data) && d.data[i] == '0':
		i++
	case !digits():
		return nil, false
	}
	if i < len(d.data) && d.data[i] == '.' {
		i++
		if !digits() {
			return nil, false
		}
	}
	if i < len(d.data) && (d.data[i] == 'e' || d.data[i] == 'E') {
		i++
		if i < len(d.data) && (d.data[i] == '+' || d.data[i] == '-') {
			i++
		}
		if !digits() {
			return nil, false
		}
	}
	d.pos = i
	return d.data[start:i], true
}
