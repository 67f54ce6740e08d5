package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// How much text a snippet shows: about snippetBefore bytes before the
// first word found, snippetBytes in all.
const (
	snippetBefore = 60
	snippetBytes  = 200
)

// word is one word of a text: its bytes Start to End.
type word struct{ Start, End int }

// words returns the words of s: runs of letters and digits, which is how
// the snippet finds what the index matched (the index's own analysis may
// cut a text more coarsely, "main.go" as one word, but never across a
// space or a line).
func words(s string) []word {
	var out []word
	start := -1
	for i, r := range s {
		in := unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			out = append(out, word{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, word{start, len(s)})
	}
	return out
}

// queryWords returns the words of q, lower-cased.
func queryWords(q string) []string {
	var out []string
	for _, w := range words(q) {
		out = append(out, strings.ToLower(q[w.Start:w.End]))
	}
	return out
}

// snippet returns a line of text around the first of its words that is
// one of want, with the marks of every such word it holds. When none is,
// a word that starts with the last of want counts, as a session id found
// by its prefix does; without one either, the line is the start of text.
func snippet(text string, want []string) (string, []Mark) {
	ws := words(text)
	prefix := false
	match := func(w word) bool {
		s := strings.ToLower(text[w.Start:w.End])
		for i, x := range want {
			if s == x || prefix && i == len(want)-1 && strings.HasPrefix(s, x) {
				return true
			}
		}
		return false
	}
	from, found := 0, false
	for _, p := range []bool{false, true} {
		prefix = p
		for _, w := range ws {
			if match(w) {
				from, found = max(w.Start-snippetBefore, 0), true
				break
			}
		}
		if found {
			break
		}
	}
	to := min(from+snippetBytes, len(text))
	// Start and end on a character, and, when there is one near, on a
	// space.
	for from > 0 && !utf8.RuneStart(text[from]) {
		from--
	}
	for to < len(text) && !utf8.RuneStart(text[to]) {
		to++
	}
	if i := strings.IndexAny(text[from:min(from+20, to)], " \n\t"); from > 0 && i >= 0 {
		from += i + 1
	}
	if i := strings.LastIndexAny(text[max(to-20, from):to], " \n\t"); to < len(text) && i >= 0 {
		to = max(to-20, from) + i
	}
	var marks []Mark
	for _, w := range ws {
		if w.Start >= from && w.End <= to && match(w) {
			marks = append(marks, Mark{w.Start - from, w.End - from})
		}
	}
	// One line: each line break or tab becomes a space, byte for byte, so
	// the marks still hold.
	line := []byte(text[from:to])
	for i, c := range line {
		if c == '\n' || c == '\r' || c == '\t' {
			line[i] = ' '
		}
	}
	return string(line), marks
}
