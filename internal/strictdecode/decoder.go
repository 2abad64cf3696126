package strictdecode

import (
	"bytes"
	"reflect"
	"strconv"

	"github.com/paduraksa/paduraksa/internal/problem"
)

// Codes of the problems a Decoder reports, each with the path of the value
// in JSON names (empty for the document as a whole).
const (
	// CodeSyntax: not JSON or YAML, or data after the document (a second
	// YAML document too); the message has the line and column when known.
	CodeSyntax = "document.syntax"
	// CodeSize: larger than Options.MaxSize, or lists of more elements
	// than its bytes carry (decoded, more than 64 times the document's
	// size; the path is the list's).
	CodeSize = "document.size"
	// CodeTooManyProblems: more than MaxProblems problems; the first
	// MaxProblems come before it.
	CodeTooManyProblems = "document.problems.tooMany"
	// CodeEmpty: nothing but white space and comments, or a bare null.
	CodeEmpty = "document.empty"
	// CodeFieldUnknown: a field the type does not have, including one
	// whose name differs from a known one only in case.
	CodeFieldUnknown = "document.field.unknown"
	// CodeFieldType: a value of the wrong JSON type, or a number out of
	// range.
	CodeFieldType = "document.field.type"
	// CodeFieldDuplicate: a field or map key given twice in one object
	// (YAML: without a path, the line in the message).
	CodeFieldDuplicate = "document.field.duplicate"
)

// Options are what a Decoder says about the documents it reads. The zero
// value reads a document of any size.
type Options struct {
	// MaxSize is the largest document read, in bytes; 0 means no limit.
	MaxSize int
	// EmptyMsg is the message of CodeEmpty; empty means "empty document".
	EmptyMsg string
	// TypeNames names types in the messages of CodeFieldType ("expected a
	// duration string (like \"10s\"), got a number"); a type not listed
	// is named by its kind ("a string").
	TypeNames map[reflect.Type]string
}

// Decoder reads documents of type T. It is immutable and safe for
// concurrent use.
type Decoder[T any] struct {
	opts Options
	plan *typePlan
}

// New returns a Decoder of T, a struct type. T's fields are read by their
// JSON names (the json tag's name, or the Go name), as encoding/json reads
// them but strictly: names are case-sensitive and each is taken once.
// Fields may be strings, booleans, signed integers, floating-point numbers,
// pointers, slices, maps with string keys and structs of these. New panics
// when T holds anything else (an interface, an unsigned integer, an
// embedded struct, a type with a method UnmarshalJSON or UnmarshalText):
// a program's error, found on its first call.
func New[T any](opts Options) *Decoder[T] {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		panic("strictdecode: " + t.String() + " is not a struct")
	}
	if why := unreadable(t, map[reflect.Type]bool{}); why != "" {
		panic("strictdecode: " + t.String() + ": " + why)
	}
	return &Decoder[T]{opts: opts, plan: makePlan(t, map[reflect.Type]*typePlan{})}
}

// Decode reads a document from JSON or YAML. A document whose first
// character (after white space and a byte-order mark) is "{" is read as
// JSON; anything else as YAML (YAML 1.1, as go.yaml.in/yaml/v2 resolves
// it: yes and no are booleans, 0x1f an integer; a number or boolean where
// a string is expected is taken as its text).
//
// The error joins a *problem.Error for each problem, with the Code*
// constants. The document is nil only when data is not a document at all
// (syntax, size, empty); with problems of fields it holds every value that
// decoded, the fields in error left out (an element of a list in error is
// its zero value), so that a caller can report the problems of the values
// too, in the same refusal.
//
// A document in the forms configs are usually written in is read straight
// into its Go value in one pass (the fast path); any other, and any
// document with a problem, is read again by the general path, with the
// same result (see the package documentation).
func (d *Decoder[T]) Decode(data []byte) (*T, error) { return d.decode(data, true) }

// DecodeGeneral is Decode on the general path alone: for tests, which
// compare the two, and benchmarks.
func (d *Decoder[T]) DecodeGeneral(data []byte) (*T, error) { return d.decode(data, false) }

func (d *Decoder[T]) decode(data []byte, fast bool) (*T, error) {
	if d.opts.MaxSize > 0 && len(data) > d.opts.MaxSize {
		return nil, &problem.Error{Code: CodeSize,
			Msg: "document of " + strconv.Itoa(len(data)) + " bytes; at most " + strconv.Itoa(d.opts.MaxSize)}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	start := bytes.TrimLeft(data, " \t\r\n")
	if len(start) == 0 {
		return nil, d.errEmpty()
	}
	if fast {
		if v, ok := d.DecodeFast(data); ok {
			return v, nil
		}
	}
	v := new(T)
	doc, err := d.general(data, start[0] == '{', reflect.ValueOf(v).Elem())
	if !doc {
		return nil, err
	}
	return v, err
}

func (d *Decoder[T]) errEmpty() error {
	msg := d.opts.EmptyMsg
	if msg == "" {
		msg = "empty document"
	}
	return &problem.Error{Code: CodeEmpty, Msg: msg}
}

// unreadable says why the decoders cannot read type t, or "".
func unreadable(t reflect.Type, seen map[reflect.Type]bool) string {
	if seen[t] {
		return ""
	}
	seen[t] = true
	if t.Kind() != reflect.Pointer && (t.Implements(unmarshalerJSON) || reflect.PointerTo(t).Implements(unmarshalerJSON) ||
		t.Implements(unmarshalerText) || reflect.PointerTo(t).Implements(unmarshalerText)) {
		return t.String() + " decodes itself"
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return ""
	case reflect.Pointer, reflect.Slice:
		return unreadable(t.Elem(), seen)
	case reflect.Map:
		if t.Key().Kind() != reflect.String || t.Key() != reflect.TypeFor[string]() {
			return "a map's keys must be strings"
		}
		return unreadable(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				return "embedded field " + f.Name
			}
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			if why := unreadable(f.Type, seen); why != "" {
				return why
			}
		}
		return ""
	}
	return "a field of kind " + t.Kind().String()
}

// DecodeFast is the fast path alone: the document and true, or false
// where Decode would read data again on the general path. It is for the
// tests that prove the fast path reads the forms it is meant for.
func (d *Decoder[T]) DecodeFast(data []byte) (*T, bool) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	start := bytes.TrimLeft(data, " \t\r\n")
	if len(start) == 0 || d.opts.MaxSize > 0 && len(data) > d.opts.MaxSize {
		return nil, false
	}
	v := new(T)
	var ok bool
	if start[0] == '{' {
		ok = jsonFast(data, d.plan, reflect.ValueOf(v).Elem())
	} else {
		ok = yamlFast(data, d.plan, reflect.ValueOf(v).Elem())
	}
	if !ok {
		return nil, false
	}
	return v, true
}
