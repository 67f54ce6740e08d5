package schema

import (
	"encoding/binary"

	"github.com/reprise-dev/reprise/internal/msgp"
)

// appendMessageAppended appends the msgpack encoding of p, byte for byte as
// msgpack.Marshal writes it, without reflection.
func appendMessageAppended(b []byte, p *MessageAppended) []byte {
	b = append(b, 0x81)
	b = msgp.AppendStr(b, "msg")
	m := &p.Message
	n := 3 // uuid, role, ts
	if m.ParentUUID != "" {
		n++
	}
	if m.IsMeta {
		n++
	}
	if m.Summary {
		n++
	}
	n++ // content
	if len(m.Record) > 0 {
		n++
	}
	if len(m.ToolUseResult) > 0 {
		n++
	}
	if len(m.Attachment) > 0 {
		n++
	}
	b = append(b, 0x80|byte(n))
	b = msgp.AppendStr(msgp.AppendStr(b, "uuid"), m.UUID)
	if m.ParentUUID != "" {
		b = msgp.AppendStr(msgp.AppendStr(b, "parent"), m.ParentUUID)
	}
	b = msgp.AppendStr(msgp.AppendStr(b, "role"), m.Role)
	if m.IsMeta {
		b = append(msgp.AppendStr(b, "meta"), 0xc3)
	}
	if m.Summary {
		b = append(msgp.AppendStr(b, "summary"), 0xc3)
	}
	b = binary.BigEndian.AppendUint64(append(msgp.AppendStr(b, "ts"), msgp.CodeInt64), uint64(m.Timestamp))
	b = msgp.AppendStr(b, "content")
	if m.Content == nil {
		b = append(b, msgp.CodeNil)
	} else {
		b = msgp.AppendArrayLen(b, len(m.Content))
		for _, blk := range m.Content {
			k := 1
			if blk.Text != "" {
				k++
			}
			if len(blk.Raw) > 0 {
				k++
			}
			b = append(b, 0x80|byte(k))
			b = msgp.AppendStr(msgp.AppendStr(b, "type"), blk.Type)
			if blk.Text != "" {
				b = msgp.AppendStr(msgp.AppendStr(b, "text"), blk.Text)
			}
			if len(blk.Raw) > 0 {
				b = append(msgp.AppendBinHeader(msgp.AppendStr(b, "raw"), len(blk.Raw)), blk.Raw...)
			}
		}
	}
	if len(m.Record) > 0 {
		b = append(msgp.AppendBinHeader(msgp.AppendStr(b, "record"), len(m.Record)), m.Record...)
	}
	if len(m.ToolUseResult) > 0 {
		b = append(msgp.AppendBinHeader(msgp.AppendStr(b, "tooluse"), len(m.ToolUseResult)), m.ToolUseResult...)
	}
	if len(m.Attachment) > 0 {
		b = append(msgp.AppendBinHeader(msgp.AppendStr(b, "attachment"), len(m.Attachment)), m.Attachment...)
	}
	return b
}
