package snapshot

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/config"
)

// ownerCodeFiles are the files where the packages a document maps onto
// declare their codes.
var ownerCodeFiles = []string{"../balance/errors.go", "../health/errors.go", "../gate/problems.go", "../proxy/problems.go",
	"../tlsselect/config.go", "../internal/namedfile/namedfile.go"}

// ownerCodes returns every code the owning packages declare (the string
// constants named Code*), read from their source, so a test that checks a
// problem's code knows a new one without being told.
func ownerCodes(t testing.TB) map[string]bool {
	t.Helper()
	codes := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range ownerCodeFiles {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Code") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						codes[v] = true
					}
				}
			}
		}
	}
	if len(codes) < 50 {
		t.Fatalf("only %d owner codes found in %v", len(codes), ownerCodeFiles)
	}
	return codes
}

// knownCodes returns the document's codes, the compile's and the owners'.
func knownCodes(t testing.TB) map[string]bool {
	t.Helper()
	codes := ownerCodes(t)
	for _, c := range append(config.Codes(), allCodes[:]...) {
		codes[c] = true
	}
	codes[CodeCompileInternal] = true
	return codes
}
