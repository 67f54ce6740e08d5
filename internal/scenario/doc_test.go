package scenario

import (
	"os"
	"strings"
	"testing"
)

// TestEveryCommandIsDocumented checks that the package doc lists every
// command of the language, with what it takes, in its Commands section.
func TestEveryCommandIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for name := range commands {
		if !strings.Contains(string(doc), "//\t"+name+" ") && !strings.Contains(string(doc), "//\t"+name+"\n") {
			t.Errorf("command %q is not in the package doc's list", name)
		}
	}
}
