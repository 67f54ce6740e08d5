package projection

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// A transcript may hold text that is not valid UTF-8, and encoding/json
// turns each such byte into U+FFFD both when it decodes a string and when
// it encodes one. Messages keep their text as it was written, so the two
// functions below read and write JSON strings byte for byte.

// UnquoteJSON returns the text of lit, a JSON string literal, and whether
// lit is one. Unlike json.Unmarshal it keeps bytes that are not valid UTF-8
// as they are.
func UnquoteJSON(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' || !json.Valid(lit) {
		return "", false
	}
	var s string
	if utf8.Valid(lit) {
		return s, json.Unmarshal(lit, &s) == nil
	}
	// An invalid byte is never part of an escape, so each run of valid
	// bytes between them, quoted, is a literal of its own.
	out := make([]byte, 0, len(lit))
	body := lit[1 : len(lit)-1]
	for len(body) > 0 {
		n := validPrefix(body)
		if n == 0 {
			out, body = append(out, body[0]), body[1:]
			continue
		}
		seg := make([]byte, 0, n+2)
		seg = append(append(append(seg, '"'), body[:n]...), '"')
		if err := json.Unmarshal(seg, &s); err != nil {
			return "", false
		}
		out, body = append(out, s...), body[n:]
	}
	return string(out), true
}

// AppendJSON appends s to dst as a JSON string literal, escaped as
// encoding/json escapes it without HTML escaping, except that bytes that
// are not valid UTF-8 are written as they are.
func AppendJSON(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for len(s) > 0 {
		n := validPrefix([]byte(s))
		if n == 0 {
			dst, s = append(dst, s[0]), s[1:]
			continue
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s[:n]) // a valid string always encodes
		lit := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		dst, s = append(dst, lit[1:len(lit)-1]...), s[n:]
	}
	return append(dst, '"')
}

// validPrefix returns how many bytes at the start of b are valid UTF-8.
func validPrefix(b []byte) int {
	n := 0
	for n < len(b) {
		r, size := utf8.DecodeRune(b[n:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		n += size
	}
	return n
}

// jsonText is s as a value for encoding/json: s itself when it is valid
// UTF-8, otherwise its literal, bytes kept.
func jsonText(s string) any {
	if utf8.ValidString(s) {
		return s
	}
	return json.RawMessage(AppendJSON(nil, s))
}
