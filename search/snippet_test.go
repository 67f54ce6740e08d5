package search

import (
	"strings"
	"testing"
)

func TestSnippet(t *testing.T) {
	long := strings.Repeat("lorem ipsum ", 40)
	for _, tc := range []struct {
		name, text string
		want       []string
		snippet    string // "" to check only the marks
		marked     []string
	}{
		{name: "short text whole", text: "Permission\ndenied here", want: []string{"denied"},
			snippet: "Permission denied here", marked: []string{"denied"}},
		{name: "every match marked, any case", text: "Foo bar FOO", want: []string{"foo"},
			snippet: "Foo bar FOO", marked: []string{"Foo", "FOO"}},
		{name: "a word inside another is not one", text: "foobar foo", want: []string{"foo"},
			snippet: "foobar foo", marked: []string{"foo"}},
		{name: "the last word by its prefix", text: "session alpha-7f3e", want: []string{"alpha"},
			snippet: "session alpha-7f3e", marked: []string{"alpha"}},
		{name: "far in a long text", text: long + "the needle " + long, want: []string{"needle"}, marked: []string{"needle"}},
		{name: "no match: the start", text: long, want: []string{"absent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, marks := snippet(tc.text, tc.want)
			if tc.snippet != "" && strings.TrimSpace(got) != tc.snippet {
				t.Errorf("snippet = %q; want %q", got, tc.snippet)
			}
			if !strings.Contains(strings.ReplaceAll(tc.text, "\n", " "), strings.TrimSpace(got)) || len(got) < snippetBytes/2 && len(tc.text) > snippetBytes {
				t.Errorf("snippet %q is not a line of the text", got)
			}
			if len(got) > snippetBytes || strings.ContainsAny(got, "\n\t") {
				t.Errorf("snippet %q is %d bytes or not one line; want one line of at most %d", got, len(got), snippetBytes)
			}
			var marked []string
			for _, m := range marks {
				marked = append(marked, got[m.Start:m.End])
			}
			if strings.Join(marked, ",") != strings.Join(tc.marked, ",") {
				t.Errorf("marks %v of %q hold %q; want %q", marks, got, marked, tc.marked)
			}
		})
	}
}
