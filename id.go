package reprise

import (
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/reprise-dev/reprise/internal/uuid"
)

// MaxIDLen bounds session and agent ids.
const MaxIDLen = 128

// idChars says which characters an id may hold, for error messages.
const idChars = "letters, digits, '-', '_', '.' and ':'"

// ValidateID reports whether id can name a session or an agent. Ids end up
// in stream names and file names, so only letters, digits, '-', '_', '.'
// and ':' are allowed, ".." is not, and the first character is a letter or
// digit. The error says what would work, and quotes a long id only in part.
func ValidateID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: the id is empty; use 1 to %d %s", ErrInvalidID, MaxIDLen, idChars)
	}
	if len(id) > MaxIDLen {
		return fmt.Errorf("%w %s: longer than %d bytes", ErrInvalidID, quoteID(id), MaxIDLen)
	}
	for i, r := range id {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		switch {
		case alnum:
		case i == 0:
			return fmt.Errorf("%w %s: it must start with a letter or digit", ErrInvalidID, quoteID(id))
		case !strings.ContainsRune("-_.:", r):
			return fmt.Errorf("%w %s: %q at byte %d is not allowed; use only %s", ErrInvalidID, quoteID(id), r, i, idChars)
		}
	}
	if strings.Contains(id, "..") {
		return fmt.Errorf("%w %s: it must not contain \"..\"", ErrInvalidID, quoteID(id))
	}
	return nil
}

// quoteID quotes id for a message: whole when it is short, else its first
// 32 bytes (fewer, to end on a whole character), an ellipsis and its
// length.
func quoteID(id string) string {
	const keep = 32
	if len(id) <= keep+8 {
		return strconv.Quote(id)
	}
	cut := keep
	for !utf8.RuneStart(id[cut]) {
		cut--
	}
	return fmt.Sprintf("%s (%d bytes)", strconv.Quote(id[:cut]+"…"), len(id))
}

// uuidBlock is how many UUIDs' worth of randomness newUUID reads at once:
// one read of the system's generator instead of one per message.
const uuidBlock = 256

// uuids hands out the random bytes of the next UUIDs.
var uuids struct {
	sync.Mutex
	buf  [uuidBlock * 16]byte
	next int // bytes of buf used
}

// newUUID returns a random version 4 UUID.
func newUUID() string {
	var b [16]byte
	uuids.Lock()
	if uuids.next == 0 || uuids.next == len(uuids.buf) {
		_, _ = rand.Read(uuids.buf[:]) // crypto/rand.Read never fails
		uuids.next = 0
	}
	copy(b[:], uuids.buf[uuids.next:])
	clear(uuids.buf[uuids.next : uuids.next+16]) // handed out once
	uuids.next += 16
	uuids.Unlock()
	return uuid.V4(b)
}
