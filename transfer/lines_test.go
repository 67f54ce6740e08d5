package transfer

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestLineReaderKeepsLinesByteForByte checks what an import reads of each
// line: without its newline, with a carriage return, the last one without
// a newline too, and a line over the limit reported, not held, even when
// it is longer than the reader's buffer.
func TestLineReaderKeepsLinesByteForByte(t *testing.T) {
	long := strings.Repeat("x", 40)
	input := "a\r\n\nb\n" + long + "\nc"
	l := &lineReader{r: bufio.NewReaderSize(strings.NewReader(input), 16), max: 8}
	type line struct {
		text    string
		tooLong bool
	}
	want := []line{{"a\r", false}, {"", false}, {"b", false}, {"", true}, {"c", false}}
	for i, w := range want {
		got, tooLong, err := l.next()
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if string(got) != w.text || tooLong != w.tooLong {
			t.Errorf("line %d = %q, too long %v; want %q, %v", i+1, got, tooLong, w.text, w.tooLong)
		}
	}
	if _, _, err := l.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last line: %v, want io.EOF", err)
	}
}

// TestCountingReaderCountsWhatPassed checks the byte count an import
// reports.
func TestCountingReaderCountsWhatPassed(t *testing.T) {
	c := &countingReader{r: strings.NewReader("hello\nworld\n")}
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatal(err)
	}
	if c.n != 12 {
		t.Fatalf("counted %d bytes, want 12", c.n)
	}
}
