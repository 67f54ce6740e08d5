package api

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"testing"
)

// Every code the handler answers with is one the document lists, and the
// document lists none the handler never gives.
func TestEveryCodeIsDocumentedAndUsed(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				ErrorCode struct {
					Enum []string `json:"enum"`
				}
			}
		}
	}
	if err := json.Unmarshal(Document, &doc); err != nil {
		t.Fatal(err)
	}
	documented := doc.Components.Schemas.ErrorCode.Enum
	used := map[string]bool{}
	for _, c := range codes {
		used[c.code] = true
	}
	literal := regexp.MustCompile(`code: +"([a-z_]+)"`)
	for _, file := range []string{"api.go", "actions.go", "errors.go"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range literal.FindAllSubmatch(src, -1) {
			used[string(m[1])] = true
		}
	}
	for c := range used {
		if !slices.Contains(documented, c) {
			t.Errorf("the handler answers %s, which the document does not list", c)
		}
	}
	for _, c := range documented {
		if !used[c] {
			t.Errorf("the document lists %s, which the handler never answers", c)
		}
	}
}
