package reprise_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
)

// An invalid id's error says what is wrong and what would work, and never
// quotes a long id whole.
func TestValidateIDSaysWhatWouldWork(t *testing.T) {
	long := strings.Repeat("x", 2000)
	for _, tc := range []struct {
		id, want string
	}{
		{"", `reprise: invalid id: the id is empty; use 1 to 128 letters, digits, '-', '_', '.' and ':'`},
		{"-x", `reprise: invalid id "-x": it must start with a letter or digit`},
		{"a/b", `reprise: invalid id "a/b": '/' at byte 1 is not allowed; use only letters, digits, '-', '_', '.' and ':'`},
		{"tab\there", `reprise: invalid id "tab\there": '\t' at byte 3 is not allowed; use only letters, digits, '-', '_', '.' and ':'`},
		{"a..b", `reprise: invalid id "a..b": it must not contain ".."`},
		{long, `reprise: invalid id "` + strings.Repeat("x", 32) + `…" (2000 bytes): longer than 128 bytes`},
		{"é" + long, `reprise: invalid id "` + "é" + strings.Repeat("x", 30) + `…" (2002 bytes): longer than 128 bytes`},
	} {
		err := reprise.ValidateID(tc.id)
		if !errors.Is(err, reprise.ErrInvalidID) || err.Error() != tc.want {
			t.Errorf("ValidateID(%.20q) = %v\nwant %s", tc.id, err, tc.want)
		}
	}
	for _, id := range []string{"a", "0", "ide-1", "a.b:c_d", strings.Repeat("y", reprise.MaxIDLen)} {
		if err := reprise.ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q) = %v", id, err)
		}
	}
}

// TestNewIDsAreVersion4UUIDs checks the Engine's default ids across more
// than one block of randomness: each a version 4, variant 1 UUID in lower
// case hex, none twice.
func TestNewIDsAreVersion4UUIDs(t *testing.T) {
	ctx := context.Background()
	e := reprise.New(eventlog.NewMemoryStore(), reprise.Options{AllowMissingCwd: true, Files: reprise.NewMemoryFiles()})
	id, err := e.CreateSession(ctx, "", "/nowhere")
	if err != nil {
		t.Fatal(err)
	}
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		m, err := e.Buffer(ctx, id, reprise.Text("user", "x"))
		if err != nil {
			t.Fatal(err)
		}
		if !v4.MatchString(m.UUID) || seen[m.UUID] {
			t.Fatalf("id %q: not a version 4 UUID, or seen before", m.UUID)
		}
		seen[m.UUID] = true
	}
}
