package strictdecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/internal/problem"
)

// general reads data into v on the general path, JSON or YAML, and
// reports whether data was a document at all (an object); the error joins
// every problem.
func (d *Decoder[T]) general(data []byte, isJSON bool, v reflect.Value) (bool, error) {
	js := data
	var probs []*problem.Error
	if isJSON {
		if !json.Valid(data) {
			return false, jsonSyntaxError(data)
		}
	} else {
		if js, probs = yamlToJSON(data, d.plan); js == nil {
			return false, problem.List(probs).Err()
		}
		if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
			return false, d.errEmpty()
		}
	}

	w := walker{dec: json.NewDecoder(bytes.NewReader(js)), probs: probs, out: make([]byte, 0, len(js)), names: d.opts.TypeNames,
		budget: valueBudget(len(data))}
	w.dec.UseNumber()
	ok, err := w.walk(d.plan, "")
	if errors.Is(err, errStopped) {
		// Too large or too wrong to hold as a value: the problems so far.
		return false, problem.List(w.probs).Err()
	}
	if err != nil {
		// The input is valid JSON by now; this cannot happen.
		return false, &problem.Error{Code: CodeSyntax, Msg: err.Error()}
	}
	if !ok {
		return false, problem.List(w.probs).Err() // not an object: no document at all
	}
	if len(w.probs) > 0 {
		// What is left once the fields in error are out.
		js = w.out
	}
	if err := json.Unmarshal(js, v.Addr().Interface()); err != nil {
		// The walk has checked every field and type; this cannot happen.
		return false, &problem.Error{Code: CodeFieldType, Msg: err.Error()}
	}
	return true, problem.List(w.probs).Err()
}

// jsonSyntaxError describes why data is not one JSON value, with the line
// and column.
func jsonSyntaxError(data []byte) error {
	var v struct{}
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		msg := "invalid JSON"
		if err != nil {
			msg = err.Error()
		}
		return &problem.Error{Code: CodeSyntax, Msg: msg}
	}
	msg := se.Error()
	switch {
	case strings.Contains(msg, "after top-level value"):
		msg = "trailing data after the document"
	case strings.HasPrefix(msg, "unexpected end of JSON input"):
		msg = "unexpected end of the document"
	}
	off := int(se.Offset)
	if off > len(data) {
		off = len(data)
	}
	if off > 0 && msg != "unexpected end of the document" {
		off-- // Offset counts the offending byte
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return &problem.Error{Code: CodeSyntax,
		Msg: msg + " (line " + strconv.Itoa(line) + ", column " + strconv.Itoa(col) + ", offset " + strconv.Itoa(off) + ")"}
}

// walker checks JSON against a type's plan, field by field, before
// encoding/json decodes it (which would ignore unknown fields, match names
// regardless of case and stop at the first type error). It writes to out
// the same JSON without the members in error, and null for the elements of
// a list in error, which encoding/json then decodes.
type walker struct {
	dec    *json.Decoder
	probs  []*problem.Error
	out    []byte
	names  map[reflect.Type]string
	budget int // bytes the lists may still take (valueBudget)
}

// MaxProblems is the most problems a document is reported with: past it,
// the reading stops with a last problem of code CodeTooManyProblems, so
// that a document of a million wrong values costs no more than a page of
// them.
const MaxProblems = 1000

// errStopped ends a walk that found the document too large as a value
// or too wrong to list every problem of.
var errStopped = errors.New("strictdecode: reading stopped")

func (w *walker) add(code, path, msg string) {
	w.probs = append(w.probs, &problem.Error{Code: code, Path: path, Msg: msg})
}

// stop ends the walk with a last problem.
func (w *walker) stop(code, path, msg string) error {
	w.add(code, path, msg)
	return errStopped
}

// walk reads one value, checks it against p and writes it to out when it
// fits. It reports whether it did: false for a value of the wrong type.
func (w *walker) walk(p *typePlan, path string) (bool, error) {
	if len(w.probs) >= MaxProblems {
		return false, w.stop(CodeTooManyProblems, "", "more than "+strconv.Itoa(MaxProblems)+" problems: the rest are not listed")
	}
	tok, err := w.dec.Token()
	if err != nil {
		return false, err
	}
	for p.kind == reflect.Pointer {
		p = p.elem
	}
	ok := true
	switch v := tok.(type) {
	case nil:
		w.out = append(w.out, "null"...) // the same as absent
	case json.Delim:
		switch {
		case v == '{' && p.kind == reflect.Struct:
			return true, w.object(p, path)
		case v == '{' && p.kind == reflect.Map:
			return true, w.mapObject(p.elem, path)
		case v == '[' && p.kind == reflect.Slice:
			return true, w.array(p.elem, path)
		}
		got := "an object"
		if v == '[' {
			got = "an array"
		}
		w.typeError(p, path, got)
		return false, w.skipRest()
	case string:
		if ok = p.kind == reflect.String; !ok {
			w.typeError(p, path, "a string")
		} else {
			w.out = AppendString(w.out, v)
		}
	case bool:
		if ok = p.kind == reflect.Bool; !ok {
			w.typeError(p, path, "a boolean")
		} else {
			w.out = strconv.AppendBool(w.out, v)
		}
	case json.Number:
		if ok = w.number(p, path, v); ok {
			w.out = append(w.out, v...)
		}
	}
	return ok, nil
}

func (w *walker) number(p *typePlan, path string, n json.Number) bool {
	switch p.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if _, err := strconv.ParseInt(string(n), 10, p.typ.Bits()); err != nil {
			if errors.Is(err, strconv.ErrRange) {
				w.add(CodeFieldType, path, "number "+string(n)+" is out of range")
			} else {
				w.add(CodeFieldType, path, "expected an integer, got "+string(n))
			}
			return false
		}
	case reflect.Float32, reflect.Float64:
		if _, err := strconv.ParseFloat(string(n), p.typ.Bits()); err != nil {
			w.add(CodeFieldType, path, "number "+string(n)+" is out of range")
			return false
		}
	default:
		w.typeError(p, path, "a number")
		return false
	}
	return true
}

func (w *walker) typeError(p *typePlan, path, got string) {
	w.add(CodeFieldType, path, "expected "+w.describe(p.typ)+", got "+got)
}

func (w *walker) describe(t reflect.Type) string {
	if name, ok := w.names[t]; ok {
		return name
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "an array"
	}
	return "an object"
}

// member writes the key of an object member and its value, or nothing
// when the value is of the wrong type.
func (w *walker) member(first *bool, key string, p *typePlan, path string) error {
	mark := len(w.out)
	if !*first {
		w.out = append(w.out, ',')
	}
	w.out = AppendString(w.out, key)
	w.out = append(w.out, ':')
	ok, err := w.walk(p, path)
	if !ok {
		w.out = w.out[:mark]
		return err
	}
	*first = false
	return err
}

// object checks the members of an object (after its "{") against the
// struct of plan p.
func (w *walker) object(p *typePlan, path string) error {
	w.out = append(w.out, '{')
	first := true
	var seen []string
	for w.dec.More() {
		key, err := w.key()
		if err != nil {
			return err
		}
		kp := JoinKey(path, key)
		f, ok := p.field(key)
		switch {
		case !ok:
			msg := "unknown field " + strconv.Quote(key)
			if f != nil {
				msg += " (field names are case-sensitive: did you mean " + strconv.Quote(f.name) + "?)"
			}
			w.add(CodeFieldUnknown, kp, msg)
			err = w.skipValue()
		case slices.Contains(seen, key):
			w.add(CodeFieldDuplicate, kp, "field "+strconv.Quote(key)+" given twice")
			err = w.skipValue()
		default:
			seen = append(seen, key)
			err = w.member(&first, key, f.plan, kp)
		}
		if err != nil {
			return err
		}
	}
	w.out = append(w.out, '}')
	_, err := w.dec.Token() // }
	return err
}

// mapObject checks the members of an object (after its "{") against a map
// with string keys and values of plan elem.
func (w *walker) mapObject(elem *typePlan, path string) error {
	w.out = append(w.out, '{')
	first := true
	var seen map[string]struct{}
	for w.dec.More() {
		key, err := w.key()
		if err != nil {
			return err
		}
		kp := JoinKey(path, key)
		if _, dup := seen[key]; dup {
			w.add(CodeFieldDuplicate, kp, "key "+strconv.Quote(key)+" given twice")
			err = w.skipValue()
		} else {
			if seen == nil {
				seen = make(map[string]struct{})
			}
			seen[key] = struct{}{}
			err = w.member(&first, key, elem, kp)
		}
		if err != nil {
			return err
		}
	}
	w.out = append(w.out, '}')
	_, err := w.dec.Token() // }
	return err
}

// array checks the elements of an array (after its "["); an element of the
// wrong type is written as null, so the others keep their indexes.
func (w *walker) array(elem *typePlan, path string) error {
	w.out = append(w.out, '[')
	size := max(int(elem.typ.Size()), 1)
	for i := 0; w.dec.More(); i++ {
		if w.budget -= size; w.budget < 0 {
			return w.stop(CodeSize, path, "the document's lists would take more than "+strconv.Itoa(budgetPerByte)+
				" times its size once decoded: too many elements for its bytes")
		}
		if i > 0 {
			w.out = append(w.out, ',')
		}
		mark := len(w.out)
		ok, err := w.walk(elem, path+"["+strconv.Itoa(i)+"]")
		if err != nil {
			return err
		}
		if !ok {
			w.out = append(w.out[:mark], "null"...)
		}
	}
	w.out = append(w.out, ']')
	_, err := w.dec.Token() // ]
	return err
}

func (w *walker) key() (string, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return "", err
	}
	key, ok := tok.(string)
	if !ok {
		return "", errors.New("object key is not a string")
	}
	return key, nil
}

// skipValue skips the next value.
func (w *walker) skipValue() error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') {
		return w.skipRest()
	}
	return nil
}

// skipRest skips the rest of an object or array whose opening delimiter
// was read.
func (w *walker) skipRest() error {
	for depth := 1; depth > 0; {
		tok, err := w.dec.Token()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// JoinKey appends an object key to a path: ".key" for a plain key,
// `["key"]` for any other, as the decoders write the paths of their
// problems.
func JoinKey(path, key string) string {
	plain := key != ""
	for i := 0; i < len(key) && plain; i++ {
		c := key[i]
		plain = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
	}
	switch {
	case !plain:
		return path + "[" + strconv.Quote(key) + "]"
	case path == "":
		return key
	}
	return path + "." + key
}
