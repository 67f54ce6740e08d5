package web

import (
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// shortTime formats UTC unix nanoseconds for people: UTC, to the second,
// or "-" for 0.
func shortTime(ns int64) string {
	if ns == 0 {
		return "-"
	}
	return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05Z")
}

// duration formats nanoseconds for people, to the tenth of a millisecond
// under a second.
func duration(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// count formats n for people, in decimal with a comma between each
// three digits: 2,001.
func count(n int) string {
	s := strconv.Itoa(n)
	start := 0
	if n < 0 {
		start = 1
	}
	for i := len(s) - 3; i > start; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// itoa formats i in decimal.
func itoa(i int) string { return strconv.Itoa(i) }

// clip shortens what a request named, for an answer that echoes it: a
// name no store holds can be of any length.
func clip(s string) string {
	const most = 64
	if len(s) <= most {
		return strconv.Quote(s)
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + fmt.Sprintf("… (%d bytes)", len(s))
}
