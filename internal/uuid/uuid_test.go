package uuid

import (
	"regexp"
	"testing"
)

func TestV4(t *testing.T) {
	form := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	var ones [16]byte
	for i := range ones {
		ones[i] = 0xff
	}
	for _, b := range [][16]byte{{}, ones, {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}} {
		if s := V4(b); !form.MatchString(s) {
			t.Errorf("V4(%x) = %q, not a version 4 UUID", b, s)
		}
	}
	if got, want := V4([16]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}),
		"01234567-89ab-4def-8123-456789abcdef"; got != want {
		t.Errorf("V4 = %q, want %q", got, want)
	}
}
