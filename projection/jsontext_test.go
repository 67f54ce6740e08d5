package projection_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/reprise-dev/reprise/projection"
)

// AppendJSON writes what encoding/json writes for valid text, keeps other
// bytes, and UnquoteJSON reads both back to the same text.
func TestJSONTextKeepsBytes(t *testing.T) {
	for _, s := range []string{"", "plain", "quote \" slash \\ nl \n tab \t <&> \u2028 é 😀 \x01",
		"\xff", "a\xffb", "\xe2\x82", "ok\xc3", "\ufffd literal", "\xed\xa0\x80 surrogate bytes"} {
		lit := projection.AppendJSON(nil, s)
		if !json.Valid(lit) {
			t.Errorf("AppendJSON(%q) = %q, not JSON", s, lit)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		if std := bytes.TrimSuffix(buf.Bytes(), []byte("\n")); utf8.ValidString(s) {
			if !bytes.Equal(lit, std) {
				t.Errorf("AppendJSON(%q) = %q, encoding/json writes %q", s, lit, std)
			}
		}
		got, ok := projection.UnquoteJSON(lit)
		if !ok || got != s {
			t.Errorf("UnquoteJSON(%q) = %q, %v; want %q", lit, got, ok, s)
		}
	}
	for _, bad := range []string{``, `"`, `x`, `12`, `"a` + "\xff", `"\` + "\xff" + `"`, `{"a":1}`} {
		if got, ok := projection.UnquoteJSON([]byte(bad)); ok {
			t.Errorf("UnquoteJSON(%q) = %q, true; want false", bad, got)
		}
	}
	if got, ok := projection.UnquoteJSON([]byte(`"\u00e9\ud83d\ude00` + "\xff\"")); !ok || got != "é😀\xff" {
		t.Errorf("UnquoteJSON of escapes = %q, %v", got, ok)
	}
}
