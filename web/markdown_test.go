package web

import (
	"strings"
	"testing"
)

// What a message may hold to harm the reader is rendered harmless: no
// script, handler, frame or style survives, an image is a link that is
// never loaded, and a link goes to http, https or mailto only, apart from
// the view and without a referrer.
func TestMarkdownDisarmsHostileInput(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // in the output
		never    []string // not in it
	}{
		{"javascript link", "[click](javascript:alert(1))", []string{"click"}, []string{"javascript:", "href"}},
		{"data link", "[x](data:text/html;base64,PHNjcmlwdD4=)", []string{"x"}, []string{"data:", "href"}},
		{"relative link", "[x](/api/sessions?token=1)", []string{"x"}, []string{"href"}},
		{"web link", "[docs](https://example.com/a?b=1&c=2)",
			[]string{`href="https://example.com/a?b=1&amp;c=2"`, "nofollow", "noreferrer", `target="_blank"`}, nil},
		{"script block", "<script>alert(1)</script>\n\nafter", []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "after"}, []string{"<script"}},
		{"inline handler", "see <img src=x onerror=alert(1)> here", []string{"&lt;img src=x onerror=alert(1)&gt;"}, []string{"<img"}},
		{"raw link", `<a href="javascript:alert(1)">x</a>`, []string{"&lt;a href="}, []string{"<a href"}},
		{"image", "![tracker](https://evil.example/pixel.png)", []string{`href="https://evil.example/pixel.png"`, ">tracker</a>"}, []string{"<img"}},
		{"autolink", "<javascript:alert(1)>", nil, []string{`href="javascript`}},
		{"iframe", "<iframe src=https://evil.example></iframe>", []string{"&lt;iframe"}, []string{"<iframe"}},
		{"style", "<style>body{display:none}</style>", []string{"&lt;style&gt;"}, []string{"<style"}},
		{"code escapes", "```html\n</code></pre><script>alert(1)</script>\n```", []string{"&lt;/"}, []string{"<script", "</code></pre><"}},
		{"attribute in title", `[x](https://example.com "a\" onmouseover=\"alert(1)")`, []string{"x"}, []string{"onmouseover="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shown, rest, _ := renderMarkdown(tc.in)
			out := string(shown) + string(rest)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("rendered %q lacks %q: %s", tc.in, w, out)
				}
			}
			for _, n := range tc.never {
				if strings.Contains(out, n) {
					t.Errorf("rendered %q holds %q: %s", tc.in, n, out)
				}
			}
		})
	}
}

// Markdown renders as people read it: emphasis, lists, tables, task
// lists, and code highlighted by its fence's language.
func TestMarkdownRendersWhatAnswersUse(t *testing.T) {
	in := "# Plan\n\n**bold** and `code` and ~~gone~~\n\n1. one\n2. two\n\n- [x] done\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n```go\nfunc main() {}\n```\n"
	shown, rest, _ := renderMarkdown(in)
	out := string(shown)
	for _, w := range []string{"<h1>Plan</h1>", "<strong>bold</strong>", "<code>code</code>", "<del>gone</del>", "<ol>", "<li>two</li>",
		`type="checkbox"`, "<table>", `align="right"`, `<pre class="chroma"><code>`, `<span class="kd">func</span>`} {
		if !strings.Contains(out, w) {
			t.Errorf("rendered Markdown lacks %q:\n%s", w, out)
		}
	}
	if rest != "" {
		t.Errorf("a short answer was folded: %s", rest)
	}
	if plain, _, _ := renderMarkdown("```nosuchlanguage\nx < y\n```"); !strings.Contains(string(plain), "<pre><code>x &lt; y") {
		t.Errorf("code of a language chroma does not know is not shown plain: %s", plain)
	}
	if !strings.Contains(string(codeCSS), ".chroma .kd") || !strings.Contains(string(codeCSS), "prefers-color-scheme: dark") {
		t.Error("code.css lacks the classes of keywords or the dark scheme")
	}
}

// A long answer folds between blocks, so that a code block is never cut
// in two and each part is whole Markdown.
func TestMarkdownFoldsLongAnswersBetweenBlocks(t *testing.T) {
	var in strings.Builder
	for range 10 {
		in.WriteString(strings.Repeat("word ", 20) + "\n\n")
	}
	in.WriteString("```go\n" + strings.Repeat("x := 1\n", 40) + "```\n\n")
	for range 10 {
		in.WriteString(strings.Repeat("tail ", 20) + "\n\n")
	}
	shown, rest, restBytes := renderMarkdown(in.String())
	if rest == "" || restBytes <= 0 || restBytes >= in.Len() {
		t.Fatalf("a %d-byte answer is not folded: rest %d bytes", in.Len(), restBytes)
	}
	for _, part := range []string{string(shown), string(rest)} {
		if strings.Count(part, "<pre") != strings.Count(part, "</pre>") {
			t.Errorf("a part of the fold cuts a code block:\n%s", part)
		}
	}
	if got := strings.Count(string(shown)+string(rest), ":="); got != 40 {
		t.Errorf("the two parts hold %d lines of the code block, want 40", got)
	}
	if !strings.Contains(string(rest), "tail") || strings.Contains(string(shown), "tail") {
		t.Error("the fold does not keep the answer's order")
	}
}
