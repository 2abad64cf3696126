package strictdecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/internal/problem"
	"go.yaml.in/yaml/v2"
)

// The general YAML path: go.yaml.in/yaml/v2 reads the document into
// generic values (maps, lists, scalars), which are converted to JSON with
// the target type in mind, the way sigs.k8s.io/yaml converts them for
// its Unmarshal: a number or boolean where a string is expected becomes
// its text ("2" for version: 2, "true" for yes). The walker then reads
// that JSON as it reads any JSON document.
//
// Only documented behaviour of go.yaml.in/yaml/v2 is relied on:
// Unmarshal into an interface value gives map[interface{}]interface{},
// []interface{} and scalars; UnmarshalStrict differs from it by refusing
// duplicate mapping keys (and, into structs, unknown fields, which an
// interface value has none of), each in the Errors of a *yaml.TypeError.

// yamlToJSON converts a YAML document to JSON, directed by plan p, and
// reports duplicate keys; a document whose only problems are duplicate
// keys is converted anyway (the last value of a key wins), so that its
// other problems are found too. The JSON is nil when the data is not a
// YAML document.
func yamlToJSON(data []byte, p *typePlan) ([]byte, []*problem.Error) {
	if extraYAMLDocument(data) {
		return nil, []*problem.Error{{Code: CodeSyntax, Msg: "trailing data: more than one YAML document"}}
	}
	var probs []*problem.Error
	var v any
	if err := yaml.UnmarshalStrict(data, &v); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, yamlSyntax(err)
		}
		for _, msg := range te.Errors {
			probs = append(probs, &problem.Error{Code: CodeFieldDuplicate, Msg: msg})
		}
		v = nil
		if err := yaml.Unmarshal(data, &v); err != nil {
			return nil, probs
		}
	}
	j, err := jsonable(v, p)
	if err != nil {
		return nil, append(probs, &problem.Error{Code: CodeSyntax, Msg: err.Error()})
	}
	js, err := json.Marshal(j)
	if err != nil {
		return nil, append(probs, &problem.Error{Code: CodeSyntax, Msg: err.Error()}) // NaN, infinities
	}
	return js, probs
}

func yamlSyntax(err error) []*problem.Error {
	return []*problem.Error{{Code: CodeSyntax, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}}
}

// jsonable converts a value go.yaml.in/yaml/v2 read into one that
// encoding/json writes, directed by plan p (nil: undirected): map keys
// become strings, and a number or boolean where p is a string becomes its
// text. It is sigs.k8s.io/yaml's conversion (convertToJSONableObject),
// read off its source, on the decoder's plans.
func jsonable(v any, p *typePlan) (any, error) {
	for p != nil && p.kind == reflect.Pointer {
		p = p.elem
	}
	switch v := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, val := range v {
			key, err := yamlKey(k, val)
			if err != nil {
				return nil, err
			}
			var elem *typePlan
			switch {
			case p == nil:
			case p.kind == reflect.Struct:
				if f, _ := p.field(key); f != nil {
					elem = f.plan
				}
			case p.kind == reflect.Map:
				elem = p.elem
			}
			if m[key], err = jsonable(val, elem); err != nil {
				return nil, err
			}
		}
		return m, nil
	case []any:
		var elem *typePlan
		if p != nil && p.kind == reflect.Slice {
			elem = p.elem
		}
		out := make([]any, len(v))
		for i, e := range v {
			var err error
			if out[i], err = jsonable(e, elem); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if p != nil && p.kind == reflect.String {
		switch n := v.(type) {
		case int:
			return strconv.Itoa(n), nil
		case int64:
			return strconv.FormatInt(n, 10), nil
		case uint64:
			return strconv.FormatUint(n, 10), nil
		case float64:
			return strconv.FormatFloat(n, 'g', -1, 32), nil
		case bool:
			return strconv.FormatBool(n), nil
		}
	}
	return v, nil
}

// yamlKey returns a mapping key as a JSON object's key.
func yamlKey(k, v any) (string, error) {
	switch k := k.(type) {
	case string:
		return k, nil
	case int:
		return strconv.Itoa(k), nil
	case int64:
		return strconv.FormatInt(k, 10), nil
	case float64:
		switch s := strconv.FormatFloat(k, 'g', -1, 32); s {
		case "+Inf":
			return ".inf", nil
		case "-Inf":
			return "-.inf", nil
		case "NaN":
			return ".nan", nil
		default:
			return s, nil
		}
	case bool:
		return strconv.FormatBool(k), nil
	}
	return "", fmt.Errorf("unsupported map key of type: %s, key: %+#v, value: %+#v", reflect.TypeOf(k), k, v)
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
