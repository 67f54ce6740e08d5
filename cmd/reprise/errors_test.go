package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// errorPrefix matches the start of an error built with errors.New or
// fmt.Errorf whose text begins with a word and a colon: "remote: ...".
var errorPrefix = regexp.MustCompile(`(?:errors\.New|fmt\.Errorf)\(\s*"([a-z]+): `)

// modulePackages returns the names of the module's packages, but main,
// and for each the prefixes its error texts begin with.
func modulePackages(t *testing.T) (names map[string]bool, prefixes map[string][]string) {
	t.Helper()
	root := filepath.Join("..", "..")
	names, prefixes = map[string]bool{}, map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module
			}
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly)
		if err != nil {
			return err
		}
		pkg := f.Name.Name
		if pkg == "main" {
			return nil
		}
		names[pkg] = true
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range errorPrefix.FindAllStringSubmatch(string(src), -1) {
			prefixes[m[1]] = append(prefixes[m[1]], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names, prefixes
}

func TestUserMessagesDropEveryPackagePrefix(t *testing.T) {
	names, prefixes := modulePackages(t)
	if !names["eventlog"] || !names["remote"] {
		t.Fatalf("the walk missed packages: %v", names)
	}
	for prefix, files := range prefixes {
		if names[prefix] && !slices.Contains(internalPrefixes, prefix) {
			t.Errorf("errors of %v begin %q, a package's name, which internalPrefixes lacks", files, prefix+": ")
		}
	}
	for _, prefix := range internalPrefixes {
		if !names[prefix] {
			t.Errorf("internalPrefixes holds %q, which names no package of the module", prefix)
		}
	}
}

func TestPlainMessage(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"remote: frame deadline passed", "frame deadline passed"},
		{"reprise: cannot read the log: boltstore: store is locked", "cannot read the log: store is locked"},
		{"eventlog: conflict\npgstore: rolled back", "conflict; rolled back"},
		{"export: out.jsonl exists", "export: out.jsonl exists"},
		{"session a" + strings.Repeat("x", 200) + ": not found", "session a" + strings.Repeat("x", 31) + "… (201 bytes): not found"},
	} {
		if got := plainMessage(tc.in); got != tc.want {
			t.Errorf("plainMessage(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
