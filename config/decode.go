package config

import (
	"reflect"

	"github.com/paduraksa/paduraksa/internal/strictdecode"
)

// MaxDocumentSize is the largest document [Decode] reads.
const MaxDocumentSize = 64 << 20

// decoder reads documents; it is immutable.
var decoder = strictdecode.New[Document](strictdecode.Options{
	MaxSize:   MaxDocumentSize,
	EmptyMsg:  "empty document (write {} for an empty config)",
	TypeNames: map[reflect.Type]string{reflect.TypeFor[Duration](): "a duration string (like \"10s\")"},
})

// Decode reads a document from JSON or YAML. A document whose first
// character (after white space and a byte-order mark) is "{" is read as
// JSON; anything else as YAML, which uses the same field names (YAML 1.1
// as go.yaml.in/yaml/v2 reads it, so scalars such as yes and no are
// booleans, and a number or boolean written where a string is expected is
// taken as that string, as sigs.k8s.io/yaml takes it).
//
// Decode refuses, each with its path: unknown fields (code
// document.field.unknown), including names that differ from a known one
// only in case; values of the wrong type or out of range
// (document.field.type); fields given twice in an object
// (document.field.duplicate). It also refuses syntax errors and data after
// the document, including a second YAML document (document.syntax, with the
// line and column in the message when known), empty and null documents
// (document.empty), documents over MaxDocumentSize (document.size), and
// documents whose lists hold more elements than their bytes carry
// (document.size at the list: decoded, more than 64 times the document's
// size, which a document written to be served is far from). It lists at
// most 1000 problems, then stops with document.problems.tooMany.
//
// The error joins every *ValidationError found (see [Problems]). The
// document is nil only when data is not a document at all (syntax, size,
// empty, too many problems); with problems of fields it holds every value that decoded, the
// fields in error left out (an element of a list in error is its zero
// value), so that a publisher can report the problems of the values too,
// in the same refusal. Decode does not validate the values: [Check] does
// the document's own checks, and snapshot.Validate every check.
//
// A document in the forms configs are usually written in is read straight
// into its Go value in one pass; any other, and any document with a
// problem, is read by the general path described above, with the same
// result (see the package documentation for why there are two, and what
// each costs).
//
// Decode refuses an empty file or a bare null, although the zero Document
// is valid: a truncated file must not take every host down on reload.
func Decode(data []byte) (*Document, error) { return decoder.Decode(data) }
