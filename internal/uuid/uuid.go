// Package uuid formats random bytes as a version 4 UUID, the ids Claude
// Code gives transcript lines, for reprise and the code that measures it.
package uuid

import "encoding/hex"

// V4 returns b as a random (version 4, variant 1) UUID in its 36-character
// text form: b's version and variant bits are set, the rest kept.
func V4(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}
