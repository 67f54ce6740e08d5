package reprise

import (
	"crypto/rand"
	"fmt"
	"strings"
)

// MaxIDLen bounds session and agent ids.
const MaxIDLen = 128

// ValidateID reports whether id can name a session or an agent. Ids end up
// in stream names and file names, so only letters, digits, '-', '_', '.'
// and ':' are allowed, ".." is not, and the first character is a letter or
// digit.
func ValidateID(id string) error {
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("%w: %q must have 1 to %d characters", ErrInvalidID, id, MaxIDLen)
	}
	for i, r := range id {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("-_.:", r)) {
			return fmt.Errorf("%w: %q has %q at byte %d", ErrInvalidID, id, r, i)
		}
	}
	if strings.Contains(id, "..") {
		return fmt.Errorf("%w: %q contains \"..\"", ErrInvalidID, id)
	}
	return nil
}

// newUUID returns a random version 4 UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
