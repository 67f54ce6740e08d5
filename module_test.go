package reprise_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileStoreLinksNoDatabaseDriver checks that a program using only the
// root package (reprise.Open on a bbolt file) links no PostgreSQL driver,
// no model SDK, no telemetry package, and none of the web view's search,
// Markdown, highlighting or sanitising libraries: each is the caller's
// choice, in a package or module of its own.
func TestFileStoreLinksNoDatabaseDriver(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !contains(deps, "go.etcd.io/bbolt") {
		t.Fatalf("go list -deps listed %d packages without bbolt: %q", len(deps), deps)
	}
	for _, d := range deps {
		for _, heavy := range []string{"jackc/pgx", "/pgstore", "anthropic-sdk-go", "openai-go", "go.opentelemetry.io", "/adapters/", "reprise/otel", "blevesearch", "yuin/goldmark", "microcosm-cc/bluemonday", "alecthomas/chroma", "reprise/search", "reprise/web"} {
			if strings.Contains(d, heavy) {
				t.Errorf("the root package links %s", d)
			}
		}
	}
}

// TestCoreDependsOnNoIO checks that the functional core and the store
// contract link nothing that runs processes, handles signals, opens
// network connections or touches a backend: dependencies point from the
// Engine and the backends to the core, never back.
func TestCoreDependsOnNoIO(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	core := []string{"./schema", "./fsm", "./lifecycle", "./projection", "./eventlog"}
	denied := func(dep string) bool {
		switch {
		case dep == "os/exec", dep == "os/signal", dep == "net", strings.HasPrefix(dep, "net/"):
			return true
		case strings.HasPrefix(dep, "go.etcd.io/bbolt"), strings.Contains(dep, "jackc/pgx"):
			return true
		}
		return strings.HasSuffix(dep, "/reprise/hookexec")
	}
	for _, pkg := range core {
		out, err := exec.Command(gobin, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if !contains(deps, "github.com/reprise-dev/reprise/"+strings.TrimPrefix(pkg, "./")) {
			t.Fatalf("go list -deps %s did not list the package itself: %q", pkg, deps)
		}
		for _, d := range deps {
			if denied(d) {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
}

// TestViewsReadThroughProjection checks that the command line, the web
// view and their shared JSON shapes read an agent's state through the
// root and projection, never the stepper's or the state machine's own
// packages: those are the core's to change.
func TestViewsReadThroughProjection(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command(gobin, "list", "-f", "{{.ImportPath}}:{{join .Imports \" \"}}", "./cmd/reprise", "./web", "./jsonview").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 {
		t.Fatalf("go list listed %d packages, want 3:\n%s", len(lines), out)
	}
	for _, line := range lines {
		pkg, imports, _ := strings.Cut(line, ":")
		if !strings.Contains(imports, "github.com/reprise-dev/reprise") {
			t.Fatalf("%s imports nothing of reprise: %q", pkg, imports)
		}
		for _, imp := range strings.Fields(imports) {
			if imp == "github.com/reprise-dev/reprise/fsm" || imp == "github.com/reprise-dev/reprise/lifecycle" {
				t.Errorf("%s imports %s", pkg, imp)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestEveryPackageDocRendersFromItsFirstLine checks that each package's,
// nested modules' included,
// documentation, as go doc shows it, starts with "Package <name>" (a
// command's with "Command <name>"): a blank line inside a doc comment detaches
// what comes before it, and go doc would then start in the middle.
func TestEveryPackageDocRendersFromItsFirstLine(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
			return filepath.SkipDir
		}
		pkg, ok := parsePackage(t, path)
		if !ok {
			return nil
		}
		checked++
		want := "Package " + pkg.name + " "
		if pkg.name == "main" {
			want = "Command " + filepath.Base(path) + " "
		}
		if !strings.HasPrefix(pkg.doc, want) {
			t.Errorf("%s: documentation starts %q, want %q", path, firstLine(pkg.doc), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 8 {
		t.Fatalf("checked only %d packages", checked)
	}
}

type packageDoc struct{ name, doc string }

// parsePackage reads the package comment of the non-test files in dir the
// way go doc does: the comments directly above the package clauses,
// joined.
func parsePackage(t *testing.T, dir string) (packageDoc, bool) {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var pd packageDoc
	found := false
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		found = true
		pd.name = f.Name.Name
		if f.Doc != nil {
			pd.doc += f.Doc.Text()
		}
	}
	return pd, found
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
