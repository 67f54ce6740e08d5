package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress draws how far a long read got, on one line of a terminal.
type progress struct {
	w     io.Writer
	label string
	total int64 // 0 when unknown
	last  time.Time
}

// progressEvery bounds how often the bar is redrawn.
const progressEvery = 100 * time.Millisecond

// newProgress returns a bar for reading total bytes (0 if unknown) that
// draws on w, or nil when w is not a terminal.
func newProgress(w io.Writer, label string, total int64) *progress {
	if !isTerminal(w) {
		return nil
	}
	return &progress{w: w, label: label, total: total}
}

// isTerminal reports whether w is a character device, as a terminal is.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// update redraws the bar for read bytes, at most every progressEvery.
func (p *progress) update(read int64) {
	if now := time.Now(); now.Sub(p.last) >= progressEvery {
		p.last = now
		fmt.Fprint(p.w, "\r"+renderProgress(p.label, read, p.total)+"\x1b[K")
	}
}

// finish erases the bar.
func (p *progress) finish() {
	fmt.Fprint(p.w, "\r\x1b[K")
}

// progressWidth is the number of cells of the bar itself.
const progressWidth = 30

// renderProgress returns the bar's text: the label, a percentage and a bar
// when total is known, and the megabytes read.
func renderProgress(label string, read, total int64) string {
	const mb = 1 << 20
	if total <= 0 {
		return fmt.Sprintf("%s  %.1f MB", label, float64(read)/mb)
	}
	read = min(read, total)
	filled := int(read * progressWidth / total)
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", progressWidth-filled)
	return fmt.Sprintf("%s %3d%% [%s] %.1f/%.1f MB", label, read*100/total, bar, float64(read)/mb, float64(total)/mb)
}
