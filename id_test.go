package reprise_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/reprise-dev/reprise"
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
