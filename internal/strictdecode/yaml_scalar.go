package strictdecode

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
)

// How the fast YAML path resolves and converts scalars: as
// go.yaml.in/yaml/v2 resolves them and sigs.k8s.io/yaml converts them.

// setQuoted sets a quoted scalar, always a string, into a string.
func setQuoted(p *typePlan, v reflect.Value, s string) bool {
	p, v = deref(p, v)
	if p.kind != reflect.String {
		return false
	}
	v.SetString(s)
	return true
}

// What a plain scalar resolves to.
const (
	yamlString = iota
	yamlNull
	yamlBool
	yamlInt
	yamlFloat
	yamlOther // unsigned, timestamps, infinities, merge keys: left out
)

// resolvePlain resolves a plain scalar as go.yaml.in/yaml/v2 does
// (resolve.go), for the cases the fast path reads; with yamlInt and
// yamlBool it returns the value.
func resolvePlain(b []byte) (int, int64) {
	if len(b) == 0 {
		return yamlNull, 0
	}
	switch c := b[0]; {
	case c == '+' || c == '-' || '0' <= c && c <= '9':
	case c == '.':
		if _, ok := yamlWords[string(b)]; ok {
			return yamlOther, 0
		}
		if _, err := strconv.ParseFloat(string(b), 64); err == nil {
			return yamlFloat, 0
		}
		return yamlString, 0
	case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		if w, ok := yamlWords[string(b)]; ok {
			return w.kind, w.val
		}
		return yamlString, 0
	default:
		if string(b) == "<<" {
			return yamlOther, 0
		}
		return yamlString, 0
	}
	if _, ok := yamlWords[string(b)]; ok {
		return yamlOther, 0 // +.inf, -.inf
	}
	if i := bytes.IndexFunc(b, func(r rune) bool { return r < '0' || r > '9' }); i == 4 && b[4] == '-' {
		return yamlOther, 0 // perhaps a timestamp
	}
	plain := strings.ReplaceAll(string(b), "_", "")
	if n, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return yamlInt, n
	}
	if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return yamlOther, 0
	}
	if yamlFloatSyntax(plain) {
		if _, err := strconv.ParseFloat(plain, 64); err == nil {
			return yamlFloat, 0
		}
	}
	if strings.HasPrefix(plain, "0b") || strings.HasPrefix(plain, "-0b") {
		return yamlOther, 0
	}
	return yamlString, 0
}

type yamlWord struct {
	kind int
	val  int64
}

// yamlWords are the plain scalars go.yaml.in/yaml/v2 looks up by name.
var yamlWords = func() map[string]yamlWord {
	m := map[string]yamlWord{}
	for kind, list := range map[yamlWord]string{
		{yamlBool, 1}:  "y Y yes Yes YES true True TRUE on On ON",
		{yamlBool, 0}:  "n N no No NO false False FALSE off Off OFF",
		{yamlNull, 0}:  "~ null Null NULL",
		{yamlOther, 0}: ".nan .NaN .NAN .inf .Inf .INF +.inf +.Inf +.INF -.inf -.Inf -.INF",
	} {
		for _, w := range strings.Fields(list) {
			m[w] = kind
		}
	}
	return m
}()

// yamlFloatSyntax is go.yaml.in/yaml/v2's float pattern,
// ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$.
func yamlFloatSyntax(s string) bool {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	digits := func() int {
		i := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		n := i
		s = s[i:]
		return n
	}
	if s != "" && s[0] == '.' {
		s = s[1:]
		if digits() == 0 {
			return false
		}
	} else {
		if digits() == 0 {
			return false
		}
		if s != "" && s[0] == '.' {
			s = s[1:]
			digits()
		}
	}
	if s != "" && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s != "" && (s[0] == '-' || s[0] == '+') {
			s = s[1:]
		}
		if digits() == 0 {
			return false
		}
	}
	return s == ""
}

// bindPlain sets a plain scalar into v as sigs.k8s.io/yaml and
// encoding/json would, and reports whether it was null.
func bindPlain(p *typePlan, v reflect.Value, b []byte, strs *interned) (null, ok bool) {
	kind, n := resolvePlain(b)
	if kind == yamlNull {
		return true, true
	}
	p, v = deref(p, v)
	switch {
	case p.kind == reflect.String && kind == yamlString:
		v.SetString(strs.str(b))
	case p.kind == reflect.String && kind == yamlInt:
		v.SetString(strconv.FormatInt(n, 10))
	case p.kind == reflect.String && kind == yamlBool, p.kind == reflect.Bool && kind == yamlBool:
		if p.kind == reflect.Bool {
			v.SetBool(n == 1)
		} else {
			v.SetString(strconv.FormatBool(n == 1))
		}
	case p.kind >= reflect.Int && p.kind <= reflect.Int64 && kind == yamlInt:
		if v.OverflowInt(n) {
			return false, false
		}
		v.SetInt(n)
	case (p.kind == reflect.Float32 || p.kind == reflect.Float64) && kind == yamlInt:
		f := float64(n)
		if v.OverflowFloat(f) {
			return false, false
		}
		v.SetFloat(f)
	case kind == yamlFloat:
		return false, setFloat(p, v, string(b))
	default:
		return false, false
	}
	return false, true
}
