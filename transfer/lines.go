package transfer

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// lineReader reads a transcript's lines as an import keeps them: each
// without its newline but with a carriage return, byte for byte. A line
// longer than max is read past, not held: next reports it as too long.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// next returns the next line, which is valid until the next call, or
// io.EOF after the last.
func (l *lineReader) next() (line []byte, tooLong bool, err error) {
	l.buf = l.buf[:0]
	read := 0
	for {
		chunk, err := l.r.ReadSlice('\n')
		read += len(chunk)
		if n := len(l.buf) + len(bytes.TrimSuffix(chunk, []byte{'\n'})); !tooLong && n > l.max {
			tooLong, l.buf = true, l.buf[:0]
		}
		if !tooLong {
			l.buf = append(l.buf, chunk...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && read == 0:
			return nil, false, io.EOF
		case err != nil && !errors.Is(err, io.EOF):
			return nil, false, err
		}
		return bytes.TrimSuffix(l.buf, []byte{'\n'}), tooLong, nil
	}
}

// countingReader counts the bytes read through it, for the report and
// the progress an import gives.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
