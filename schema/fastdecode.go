package schema

import (
	"encoding/binary"

	"github.com/reprise-dev/reprise/internal/msgp"
)

// decodeMessageAppended decodes data into p without reflection when data
// is in the form appendMessageAppended writes: maps of the known keys in
// any order, strings as msgpack strings, bytes as non-empty binaries, the
// timestamp as an int64, nothing after the payload. It reports false for
// anything else, leaving p partly written; the caller then decodes a fresh
// value with msgpack.Unmarshal, so every input decodes as the msgpack
// library decodes it. Strings and bytes are copied, as the library copies
// them: data may alias a memory-mapped file.
func decodeMessageAppended(data []byte, p *MessageAppended) bool {
	r := reader{b: data}
	n, ok := r.mapLen()
	if !ok || n != 1 {
		return false
	}
	if k, ok := r.str(); !ok || string(k) != "msg" {
		return false
	}
	if !r.message(&p.Message) {
		return false
	}
	return r.i == len(r.b)
}

// reader reads msgpack values from b, starting at i.
type reader struct {
	b []byte
	i int
}

func (r *reader) message(m *Message) bool {
	n, ok := r.mapLen()
	if !ok {
		return false
	}
	for range n {
		k, ok := r.str()
		if !ok {
			return false
		}
		switch string(k) {
		case "uuid":
			m.UUID, ok = r.string()
		case "parent":
			m.ParentUUID, ok = r.string()
		case "role":
			m.Role, ok = r.string()
		case "meta":
			m.IsMeta, ok = r.bool()
		case "summary":
			m.Summary, ok = r.bool()
		case "ts":
			m.Timestamp, ok = r.int64()
		case "content":
			m.Content, ok = r.blocks()
		case "record":
			m.Record, ok = r.bin()
		case "tooluse":
			m.ToolUseResult, ok = r.bin()
		case "attachment":
			m.Attachment, ok = r.bin()
		default:
			return false
		}
		if !ok {
			return false
		}
	}
	return true
}

func (r *reader) blocks() ([]Block, bool) {
	if r.i < len(r.b) && r.b[r.i] == msgp.CodeNil {
		r.i++
		return nil, true
	}
	n, ok := r.arrayLen()
	if !ok || n > len(r.b)-r.i { // each block takes a byte at least
		return nil, false
	}
	blocks := make([]Block, n)
	for i := range blocks {
		fields, ok := r.mapLen()
		if !ok {
			return nil, false
		}
		b := &blocks[i]
		for range fields {
			k, ok := r.str()
			if !ok {
				return nil, false
			}
			switch string(k) {
			case "type":
				b.Type, ok = r.string()
			case "text":
				b.Text, ok = r.string()
			case "raw":
				b.Raw, ok = r.bin()
			default:
				return nil, false
			}
			if !ok {
				return nil, false
			}
		}
	}
	return blocks, true
}

// header reads the big-endian length of size bytes that follows a code.
func (r *reader) header(size int) (int, bool) {
	if size > len(r.b)-r.i {
		return 0, false
	}
	var n uint64
	for _, c := range r.b[r.i : r.i+size] {
		n = n<<8 | uint64(c)
	}
	r.i += size
	if n > uint64(len(r.b)) {
		return 0, false
	}
	return int(n), true
}

func (r *reader) code() (byte, bool) {
	if r.i >= len(r.b) {
		return 0, false
	}
	c := r.b[r.i]
	r.i++
	return c, true
}

func (r *reader) mapLen() (int, bool) {
	c, ok := r.code()
	switch {
	case !ok:
		return 0, false
	case c >= 0x80 && c <= 0x8f:
		return int(c & 0x0f), true
	case c == 0xde:
		return r.header(2)
	case c == 0xdf:
		return r.header(4)
	}
	return 0, false
}

func (r *reader) arrayLen() (int, bool) {
	c, ok := r.code()
	switch {
	case !ok:
		return 0, false
	case c >= msgp.CodeFixArr && c <= msgp.CodeFixArr|0x0f:
		return int(c & 0x0f), true
	case c == msgp.CodeArray16:
		return r.header(2)
	case c == msgp.CodeArray32:
		return r.header(4)
	}
	return 0, false
}

// str returns a msgpack string's bytes, aliasing b.
func (r *reader) str() ([]byte, bool) {
	c, ok := r.code()
	var n int
	switch {
	case !ok:
		return nil, false
	case c >= msgp.CodeFixStr && c <= msgp.CodeFixStr|0x1f:
		n = int(c & 0x1f)
	case c == msgp.CodeStr8:
		n, ok = r.header(1)
	case c == msgp.CodeStr16:
		n, ok = r.header(2)
	case c == msgp.CodeStr32:
		n, ok = r.header(4)
	default:
		return nil, false
	}
	if !ok || n > len(r.b)-r.i {
		return nil, false
	}
	s := r.b[r.i : r.i+n]
	r.i += n
	return s, true
}

// string returns a copy of a msgpack string; the roles and block types of
// the vocabulary are not copied but shared.
func (r *reader) string() (string, bool) {
	s, ok := r.str()
	if !ok {
		return "", false
	}
	switch string(s) {
	case "user":
		return "user", true
	case "assistant":
		return "assistant", true
	case "text":
		return "text", true
	}
	return string(s), true
}

// bin returns a copy of a non-empty msgpack binary.
func (r *reader) bin() ([]byte, bool) {
	c, ok := r.code()
	var n int
	switch {
	case !ok:
		return nil, false
	case c == msgp.CodeBin8:
		n, ok = r.header(1)
	case c == msgp.CodeBin16:
		n, ok = r.header(2)
	case c == msgp.CodeBin32:
		n, ok = r.header(4)
	default:
		return nil, false
	}
	if !ok || n == 0 || n > len(r.b)-r.i {
		return nil, false
	}
	b := make([]byte, n)
	copy(b, r.b[r.i:])
	r.i += n
	return b, true
}

func (r *reader) bool() (bool, bool) {
	c, ok := r.code()
	switch {
	case ok && c == 0xc3:
		return true, true
	case ok && c == 0xc2:
		return false, true
	}
	return false, false
}

func (r *reader) int64() (int64, bool) {
	if c, ok := r.code(); !ok || c != msgp.CodeInt64 || len(r.b)-r.i < 8 {
		return 0, false
	}
	v := int64(binary.BigEndian.Uint64(r.b[r.i:]))
	r.i += 8
	return v, true
}
