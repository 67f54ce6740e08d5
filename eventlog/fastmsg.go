package eventlog

import "encoding/binary"

// appendMessageAppended appends the msgpack encoding of p, byte for byte as
// msgpack.Marshal writes it, without reflection.
func appendMessageAppended(b []byte, p *MessageAppended) []byte {
	b = append(b, 0x81)
	b = appendStr(b, "msg")
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
	b = append(b, 0x80|byte(n))
	b = appendStr(appendStr(b, "uuid"), m.UUID)
	if m.ParentUUID != "" {
		b = appendStr(appendStr(b, "parent"), m.ParentUUID)
	}
	b = appendStr(appendStr(b, "role"), m.Role)
	if m.IsMeta {
		b = append(appendStr(b, "meta"), 0xc3)
	}
	if m.Summary {
		b = append(appendStr(b, "summary"), 0xc3)
	}
	b = binary.BigEndian.AppendUint64(append(appendStr(b, "ts"), mpInt64), uint64(m.Timestamp))
	b = appendStr(b, "content")
	if m.Content == nil {
		b = append(b, mpNil)
	} else {
		b = appendArrayLen(b, len(m.Content))
		for _, blk := range m.Content {
			k := 1
			if blk.Text != "" {
				k++
			}
			if len(blk.Raw) > 0 {
				k++
			}
			b = append(b, 0x80|byte(k))
			b = appendStr(appendStr(b, "type"), blk.Type)
			if blk.Text != "" {
				b = appendStr(appendStr(b, "text"), blk.Text)
			}
			if len(blk.Raw) > 0 {
				b = append(appendBinHeader(appendStr(b, "raw"), len(blk.Raw)), blk.Raw...)
			}
		}
	}
	if len(m.Record) > 0 {
		b = append(appendBinHeader(appendStr(b, "record"), len(m.Record)), m.Record...)
	}
	return b
}

func appendArrayLen(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, mpFixArr|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, mpArray16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, mpArray32), uint32(n))
}
