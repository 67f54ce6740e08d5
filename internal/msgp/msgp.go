// Package msgp writes the msgpack forms that reprise encodes by hand on its
// hot paths (the bbolt envelope and the MessageAppended payload): each value
// in its shortest form, byte for byte as the msgpack library writes it.
//
// # Caveats
//
// Only encoding lives here. Each reader decodes what it needs itself.
package msgp

import (
	"encoding/binary"
	"math"
)

// The msgpack codes reprise writes by hand. The encoder writes each value in its
// shortest form, exactly as the msgpack library does; the decoder accepts
// every form the library's decoder accepts for the same Go types.
const (
	CodeNil     = 0xc0
	CodeBin8    = 0xc4
	CodeBin16   = 0xc5
	CodeBin32   = 0xc6
	CodeUint8   = 0xcc
	CodeUint16  = 0xcd
	CodeUint32  = 0xce
	CodeUint64  = 0xcf
	CodeInt8    = 0xd0
	CodeInt16   = 0xd1
	CodeInt32   = 0xd2
	CodeInt64   = 0xd3
	CodeStr8    = 0xd9
	CodeStr16   = 0xda
	CodeStr32   = 0xdb
	CodeFixStr  = 0xa0 // to 0xbf
	CodeFixArr  = 0x90 // to 0x9f
	CodeArray16 = 0xdc
	CodeArray32 = 0xdd
)

// UintSize is the length of AppendUint's encoding of n.
func UintSize(n uint64) int {
	switch {
	case n <= math.MaxInt8:
		return 1
	case n <= math.MaxUint8:
		return 2
	case n <= math.MaxUint16:
		return 3
	case n <= math.MaxUint32:
		return 5
	}
	return 9
}

// IntSize is the length of AppendInt's encoding of n.
func IntSize(n int64) int {
	switch {
	case n >= 0:
		return UintSize(uint64(n))
	case n >= -32:
		return 1
	case n >= math.MinInt8:
		return 2
	case n >= math.MinInt16:
		return 3
	case n >= math.MinInt32:
		return 5
	}
	return 9
}

// StrSize is the length of a string of n bytes as AppendStr writes it.
func StrSize(n int) int {
	switch {
	case n < 32:
		return 1 + n
	case n < 256:
		return 2 + n
	case n <= math.MaxUint16:
		return 3 + n
	}
	return 5 + n
}

// BinSize is the length of n bytes of binary data with AppendBinHeader's header.
func BinSize(n int) int {
	switch {
	case n < 256:
		return 2 + n
	case n <= math.MaxUint16:
		return 3 + n
	}
	return 5 + n
}

// AppendUint appends n in its shortest msgpack form.
func AppendUint(b []byte, n uint64) []byte {
	switch {
	case n <= math.MaxInt8:
		return append(b, byte(n))
	case n <= math.MaxUint8:
		return append(b, CodeUint8, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, CodeUint16), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, CodeUint32), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, CodeUint64), n)
}

// AppendInt appends n in its shortest msgpack form.
func AppendInt(b []byte, n int64) []byte {
	switch {
	case n >= 0:
		return AppendUint(b, uint64(n))
	case n >= -32:
		return append(b, byte(n))
	case n >= math.MinInt8:
		return append(b, CodeInt8, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, CodeInt16), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, CodeInt32), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, CodeInt64), uint64(n))
}

// AppendStr appends s as a msgpack string.
func AppendStr(b []byte, s string) []byte {
	n := len(s)
	switch {
	case n < 32:
		b = append(b, CodeFixStr|byte(n))
	case n < 256:
		b = append(b, CodeStr8, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, CodeStr16), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, CodeStr32), uint32(n))
	}
	return append(b, s...)
}

// AppendBinHeader appends the header of n bytes of msgpack binary data.
func AppendBinHeader(b []byte, n int) []byte {
	switch {
	case n < 256:
		return append(b, CodeBin8, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, CodeBin16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, CodeBin32), uint32(n))
}

// AppendArrayLen appends the header of a msgpack array of n elements.
func AppendArrayLen(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, CodeFixArr|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, CodeArray16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, CodeArray32), uint32(n))
}
