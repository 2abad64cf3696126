package examples_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeSection returns the README's section under the heading "## name",
// up to the next one.
func readmeSection(t *testing.T, name string) string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?ms)^## ` + regexp.QuoteMeta(name) + `\n(.*?)(?:^## |\z)`).FindSubmatch(readme)
	if m == nil {
		t.Fatalf("the README has no %q section", name)
	}
	return string(m[1])
}

// TestReadmeListsEveryExample: the README's Examples section links each
// program of this directory and shows the command that runs it.
func TestReadmeListsEveryExample(t *testing.T) {
	section := readmeSection(t, "Examples")
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "paduraksad" { // the daemon has the Quick start
			continue
		}
		for _, want := range []string{"(examples/" + e.Name() + "/main.go)", "$ go run ./examples/" + e.Name() + " "} {
			if !strings.Contains(section, want) {
				t.Errorf("the README's Examples section has no %s", want)
			}
		}
	}
}

// TestReadmePackageTable: the README's package table names every package
// of the library (each directory with a doc.go, internal/ aside), and no
// other.
func TestReadmePackageTable(t *testing.T) {
	section := readmeSection(t, "Packages")
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9]+)` \\|").FindAllStringSubmatch(section, -1) {
		listed[m[1]] = true
	}
	docs, err := filepath.Glob("../*/doc.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no package found beside examples/")
	}
	for _, doc := range docs {
		pkg := filepath.Base(filepath.Dir(doc))
		if pkg == "internal" {
			continue
		}
		if !listed[pkg] {
			t.Errorf("the README's package table has no row for %s", pkg)
		}
		delete(listed, pkg)
	}
	for pkg := range listed {
		t.Errorf("the README's package table names %s, which is not a package", pkg)
	}
}
