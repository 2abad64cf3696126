package snapshot

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Decode reads a document from JSON or YAML. A document whose first
// character (after white space and a byte-order mark) is "{" is read as
// JSON; anything else as YAML, which uses the same field names (through
// sigs.k8s.io/yaml, so YAML 1.1 scalars such as yes and no are booleans,
// and a number or boolean written where a string is expected is taken as
// that string).
//
// Decode refuses, each with its path: unknown fields (code
// document.field.unknown), including names that differ from a known one
// only in case; values of the wrong type or out of range
// (document.field.type); fields given twice in an object
// (document.field.duplicate). It also refuses syntax errors and data after
// the document, including a second YAML document (document.syntax, with the
// line and column in the message when known), empty and null documents
// (document.empty), and documents over MaxDocumentSize (document.size).
//
// The error joins every *ValidationError found (see [Problems]). The
// document is nil only when data is not a document at all (syntax, size,
// empty); with problems of fields it holds every value that decoded, the
// fields in error left out (an element of a list in error is its zero
// value), so that [Publisher.PublishData] can report the problems of the
// values too, in the same refusal. Decode does not validate the values:
// call [Validate].
//
// A document in the forms configs are usually written in is read straight
// into its Go value in one pass; any other, and any document with a
// problem, is read by the general path described above, with the same
// result.
func Decode(data []byte) (*Document, error) {
	return decode(data, true)
}

// decode is Decode, with the fast decoders (decode_plan.go) tried first
// when fast is set, and the general path alone when not.
func decode(data []byte, fast bool) (*Document, error) {
	if len(data) > MaxDocumentSize {
		return nil, &ValidationError{Code: CodeDocumentSize,
			Msg: "document of " + strconv.Itoa(len(data)) + " bytes; at most " + strconv.Itoa(MaxDocumentSize)}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	start := bytes.TrimLeft(data, " \t\r\n")
	if len(start) == 0 {
		return nil, errEmptyDocument()
	}
	if fast {
		read := yamlFast
		if start[0] == '{' {
			read = jsonFast
		}
		if doc, ok := read(data); ok {
			return doc, nil
		}
	}
	js := data
	if start[0] == '{' {
		if !json.Valid(data) {
			return nil, jsonSyntaxError(data)
		}
	}
	var probs []*ValidationError
	if start[0] != '{' {
		if js, probs = yamlToJSON(data); js == nil {
			return nil, joinProblems(probs)
		}
		if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
			return nil, errEmptyDocument()
		}
	}

	w := docWalker{dec: json.NewDecoder(bytes.NewReader(js)), probs: probs, out: make([]byte, 0, len(js))}
	w.dec.UseNumber()
	ok, err := w.walk(reflect.TypeFor[Document](), "")
	if err != nil {
		// The input is valid JSON by now; this cannot happen.
		return nil, &ValidationError{Code: CodeDocumentSyntax, Msg: err.Error()}
	}
	if !ok {
		return nil, joinProblems(w.probs) // not an object: no document at all
	}
	if len(w.probs) > 0 {
		// What is left once the fields in error are out.
		js = w.out
	}
	var doc Document
	if err := json.Unmarshal(js, &doc); err != nil {
		// The walk has checked every field and type; this cannot happen.
		return nil, &ValidationError{Code: CodeDocumentFieldType, Msg: err.Error()}
	}
	return &doc, joinProblems(w.probs)
}

func errEmptyDocument() error {
	return &ValidationError{Code: CodeDocumentEmpty, Msg: "empty document (write {} for an empty config)"}
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
		return &ValidationError{Code: CodeDocumentSyntax, Msg: msg}
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
	return &ValidationError{Code: CodeDocumentSyntax,
		Msg: msg + " (line " + strconv.Itoa(line) + ", column " + strconv.Itoa(col) + ", offset " + strconv.Itoa(off) + ")"}
}

// yamlToJSON converts a YAML document to JSON. The conversion is directed
// by the Document type (a number where a string is expected becomes that
// string) and reports duplicate keys; a document whose only problems are
// duplicate keys is converted anyway (the last value of a key wins), so
// that its other problems are found too. The JSON is nil when the data is
// not a YAML document.
func yamlToJSON(data []byte) ([]byte, []*ValidationError) {
	if extraYAMLDocument(data) {
		return nil, []*ValidationError{{Code: CodeDocumentSyntax, Msg: "trailing data: more than one YAML document"}}
	}
	js, err := yamlConvert(data, yaml.UnmarshalStrict)
	if err == nil {
		return js, nil
	}
	probs := yamlProblems(err)
	for _, p := range probs {
		if p.Code != CodeDocumentFieldDuplicate {
			return nil, probs
		}
	}
	if js, err = yamlConvert(data, yaml.Unmarshal); err != nil {
		return nil, probs
	}
	return js, probs
}

// yamlConvert converts data with one of sigs.k8s.io/yaml's Unmarshal
// functions. They convert with the target type in mind only inside
// Unmarshal; the JSON they produce is taken from the decoder they hand to
// their options, and the decode they then do is a no-op.
func yamlConvert(data []byte, unmarshal func([]byte, any, ...yaml.JSONOpt) error) ([]byte, error) {
	var js []byte
	capture := func(d *json.Decoder) *json.Decoder {
		var raw json.RawMessage
		if err := d.Decode(&raw); err == nil {
			js = raw
		}
		return json.NewDecoder(strings.NewReader("null"))
	}
	var target Document
	err := unmarshal(data, &target, capture)
	if err == nil && js == nil {
		err = errors.New("no document")
	}
	return js, err
}

// yamlProblems describes the error of a YAML conversion.
func yamlProblems(err error) []*ValidationError {
	if inner := errors.Unwrap(err); inner != nil {
		err = inner
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "unmarshal errors:\n"); ok {
		var probs []*ValidationError
		for l := range strings.Lines(rest) {
			l = strings.TrimSpace(l)
			code := CodeDocumentSyntax
			if strings.Contains(l, "already set in map") {
				code = CodeDocumentFieldDuplicate
			}
			probs = append(probs, &ValidationError{Code: code, Msg: l})
		}
		if len(probs) > 0 {
			return probs
		}
	}
	return []*ValidationError{{Code: CodeDocumentSyntax, Msg: msg}}
}

// extraYAMLDocument reports whether data holds content after its first
// YAML document: a "---" marker after content, or content after a "..."
// marker. Markers are only recognised at the start of a line, where YAML
// does not allow them inside scalars.
func extraYAMLDocument(data []byte) bool {
	seen, ended := false, false
	for rest := data; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		line = bytes.TrimRight(line, "\r")
		if after, ok := yamlMarker(line, "---"); ok {
			if seen || ended {
				return yamlContent(after) || yamlContentIn(rest)
			}
			seen = yamlContent(after)
			continue
		}
		if _, ok := yamlMarker(line, "..."); ok {
			ended = true
			continue
		}
		if !yamlContent(line) {
			continue
		}
		if ended {
			return true
		}
		if !seen && line[0] == '%' {
			continue // a directive
		}
		seen = true
	}
	return false
}

// yamlMarker reports whether line is the document marker m, and returns
// the rest of the line.
func yamlMarker(line []byte, m string) ([]byte, bool) {
	if !bytes.HasPrefix(line, []byte(m)) {
		return nil, false
	}
	rest := line[len(m):]
	if len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' {
		return nil, false
	}
	return rest, true
}

// yamlContent reports whether a line holds more than space and a comment.
func yamlContent(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) > 0 && t[0] != '#'
}

// yamlContentIn reports whether any line of data holds content.
func yamlContentIn(data []byte) bool {
	for line := range bytes.Lines(data) {
		if yamlContent(line) {
			return true
		}
	}
	return false
}

// docWalker checks JSON against the Document type, field by field, before
// encoding/json decodes it (which would ignore unknown fields, match names
// regardless of case and stop at the first type error). It writes to out
// the same JSON without the members in error, and null for the elements of
// a list in error, which encoding/json then decodes.
type docWalker struct {
	dec   *json.Decoder
	probs []*ValidationError
	out   []byte
}

func (w *docWalker) add(code, path, msg string) {
	w.probs = append(w.probs, &ValidationError{Code: code, Path: path, Msg: msg})
}

// walk reads one value, checks it against t and writes it to out when it
// fits. It reports whether it did: false for a value of the wrong type.
func (w *docWalker) walk(t reflect.Type, path string) (bool, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return false, err
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	ok := true
	switch v := tok.(type) {
	case nil:
		w.out = append(w.out, "null"...) // the same as absent
	case json.Delim:
		switch {
		case v == '{' && t.Kind() == reflect.Struct:
			return true, w.object(t, path)
		case v == '{' && t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
			return true, w.mapObject(t.Elem(), path)
		case v == '[' && t.Kind() == reflect.Slice:
			return true, w.array(t.Elem(), path)
		}
		got := "an object"
		if v == '[' {
			got = "an array"
		}
		w.typeError(t, path, got)
		return false, w.skipRest()
	case string:
		if ok = t.Kind() == reflect.String; !ok {
			w.typeError(t, path, "a string")
		} else {
			w.out = appendJSONString(w.out, v)
		}
	case bool:
		if ok = t.Kind() == reflect.Bool; !ok {
			w.typeError(t, path, "a boolean")
		} else {
			w.out = strconv.AppendBool(w.out, v)
		}
	case json.Number:
		if ok = w.number(t, path, v); ok {
			w.out = append(w.out, v...)
		}
	}
	return ok, nil
}

func (w *docWalker) number(t reflect.Type, path string, n json.Number) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			if errors.Is(err, strconv.ErrRange) {
				w.add(CodeDocumentFieldType, path, "number "+string(n)+" is out of range")
			} else {
				w.add(CodeDocumentFieldType, path, "expected an integer, got "+string(n))
			}
			return false
		}
	case reflect.Float32, reflect.Float64:
		if _, err := strconv.ParseFloat(string(n), t.Bits()); err != nil {
			w.add(CodeDocumentFieldType, path, "number "+string(n)+" is out of range")
			return false
		}
	default:
		w.typeError(t, path, "a number")
		return false
	}
	return true
}

func (w *docWalker) typeError(t reflect.Type, path, got string) {
	w.add(CodeDocumentFieldType, path, "expected "+describeType(t)+", got "+got)
}

func describeType(t reflect.Type) string {
	if t == reflect.TypeFor[Duration]() {
		return "a duration string (like \"10s\")"
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
func (w *docWalker) member(first *bool, key string, t reflect.Type, path string) error {
	mark := len(w.out)
	if !*first {
		w.out = append(w.out, ',')
	}
	w.out = appendJSONString(w.out, key)
	w.out = append(w.out, ':')
	ok, err := w.walk(t, path)
	if !ok {
		w.out = w.out[:mark]
		return err
	}
	*first = false
	return err
}

// object checks the members of an object (after its "{") against struct
// type t.
func (w *docWalker) object(t reflect.Type, path string) error {
	w.out = append(w.out, '{')
	first := true
	var seen []string
	for w.dec.More() {
		key, err := w.key()
		if err != nil {
			return err
		}
		kp := joinKey(path, key)
		f, ok := jsonField(t, key)
		switch {
		case !ok:
			msg := "unknown field " + strconv.Quote(key)
			if f.Name != "" {
				msg += " (field names are case-sensitive: did you mean " + strconv.Quote(jsonName(f)) + "?)"
			}
			w.add(CodeDocumentFieldUnknown, kp, msg)
			err = w.skipValue()
		case containsString(seen, key):
			w.add(CodeDocumentFieldDuplicate, kp, "field "+strconv.Quote(key)+" given twice")
			err = w.skipValue()
		default:
			seen = append(seen, key)
			err = w.member(&first, key, f.Type, kp)
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
// with string keys and elem values.
func (w *docWalker) mapObject(elem reflect.Type, path string) error {
	w.out = append(w.out, '{')
	first := true
	var seen map[string]struct{}
	for w.dec.More() {
		key, err := w.key()
		if err != nil {
			return err
		}
		kp := joinKey(path, key)
		if _, dup := seen[key]; dup {
			w.add(CodeDocumentFieldDuplicate, kp, "key "+strconv.Quote(key)+" given twice")
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
func (w *docWalker) array(elem reflect.Type, path string) error {
	w.out = append(w.out, '[')
	for i := 0; w.dec.More(); i++ {
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

func (w *docWalker) key() (string, error) {
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
func (w *docWalker) skipValue() error {
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
func (w *docWalker) skipRest() error {
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

// jsonField finds the field of struct t whose JSON name is exactly key.
// When there is none, it returns a field whose name matches regardless of
// case (for the message), and false.
func jsonField(t reflect.Type, key string) (reflect.StructField, bool) {
	var fold reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("json") == "-" {
			continue
		}
		name := jsonName(f)
		if name == key {
			return f, true
		}
		if fold.Name == "" && strings.EqualFold(name, key) {
			fold = f
		}
	}
	return fold, false
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// joinKey appends an object key to a path: ".key" for a plain key,
// `["key"]` for any other.
func joinKey(path, key string) string {
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

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
