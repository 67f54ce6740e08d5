package web

import (
	"bytes"
	"html"
	"html/template"
	"regexp"
	"strings"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"
	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// A model's answer is Markdown: the view renders it with goldmark (GitHub's
// dialect: tables, strikethrough, task lists, bare links), and sanitises
// the result with bluemonday, so that what a message holds cannot run in
// the page, load anything or leave it unasked. Raw HTML in a message is
// shown as the text it is; an image is a link to it, never loaded; a link
// goes only to http, https or mailto, and opens apart from the view, with
// no referrer. Fenced code is highlighted by chroma, whose classes the
// view's code.css colours.

// markdown is the parser and renderer of messages.
var markdown = goldmark.New(
	goldmark.WithExtensions(extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
		extension.Strikethrough, extension.Linkify, extension.TaskList),
	goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(plainRenderer{}, 100))),
)

// sanitizer keeps what the renderer makes of Markdown and nothing else.
var sanitizer = func() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowElements("p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "ul", "ol", "li",
		"pre", "code", "em", "strong", "del", "table", "thead", "tbody", "tr", "th", "td")
	p.AllowAttrs("start").Matching(regexp.MustCompile(`^[0-9]{1,9}$`)).OnElements("ol")
	p.AllowAttrs("align").Matching(regexp.MustCompile(`^(left|right|center)$`)).OnElements("th", "td")
	p.AllowAttrs("type").Matching(regexp.MustCompile(`^checkbox$`)).OnElements("input")
	p.AllowAttrs("checked", "disabled").Matching(regexp.MustCompile(`^(|checked|disabled)$`)).OnElements("input")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^[a-z0-9 -]{1,64}$`)).OnElements("pre", "code", "span")
	p.AllowAttrs("href").OnElements("a")
	p.AllowURLSchemes("http", "https", "mailto")
	p.RequireParseableURLs(true)
	p.AllowRelativeURLs(false)
	p.RequireNoFollowOnLinks(true)
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	return p
}()

// highlightMost is the longest code block chroma highlights; a longer one
// is shown plain, as lexing it would cost more than it shows.
const highlightMost = 32 << 10

// codeFormatter writes chroma's tokens as spans with classes.
var codeFormatter = chromahtml.New(chromahtml.WithClasses(true), chromahtml.PreventSurroundingPre(true))

// codeStyles are the colours of code: light, and dark for a dark scheme.
var codeStyles = [2]string{"github", "github-dark"}

// codeCSS is the stylesheet of chroma's classes, /static/code.css.
var codeCSS = func() []byte {
	var b bytes.Buffer
	if err := codeFormatter.WriteCSS(&b, styles.Get(codeStyles[0])); err != nil {
		panic(err) // the styles are compiled in
	}
	b.WriteString("@media (prefers-color-scheme: dark) {\n")
	if err := codeFormatter.WriteCSS(&b, styles.Get(codeStyles[1])); err != nil {
		panic(err)
	}
	b.WriteString("}\n")
	return b.Bytes()
}()

// renderMarkdown returns text rendered, and sanitised, as HTML: the whole
// of it, or, for a longer text, the blocks that start in its first
// foldAfter bytes as shown and the blocks after them as rest, with rest's
// length in bytes of Markdown (a short rest is not worth folding).
func renderMarkdown(src string) (shown, rest template.HTML, restBytes int) {
	source := []byte(src)
	doc := markdown.Parser().Parse(text.NewReader(source))
	split := len(source)
	var head, tail bytes.Buffer
	out := &head
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		if out == &head && n.PreviousSibling() != nil && blockStart(n, source) > foldAfter && len(source)-blockStart(n, source) > foldAfter/4 {
			out, split = &tail, blockStart(n, source)
		}
		if err := markdown.Renderer().Render(out, source, n); err != nil {
			// The renderer fails only on its writer, a buffer here.
			return template.HTML("<pre>" + html.EscapeString(src) + "</pre>"), "", 0
		}
	}
	shown = template.HTML(sanitizer.SanitizeBytes(head.Bytes()))
	if tail.Len() > 0 {
		rest, restBytes = template.HTML(sanitizer.SanitizeBytes(tail.Bytes())), len(source)-split
	}
	return shown, rest, restBytes
}

// blockStart is the byte offset in source where block n begins: its first
// line's, or its first child's.
func blockStart(n ast.Node, source []byte) int {
	for ; n != nil; n = n.FirstChild() {
		if n.Type() == ast.TypeBlock && n.Lines().Len() > 0 {
			return n.Lines().At(0).Start
		}
		if n.Type() == ast.TypeInline {
			if t, ok := n.(*ast.Text); ok {
				return t.Segment.Start
			}
		}
	}
	return len(source)
}

// plainRenderer renders the nodes that the view shows otherwise than
// goldmark's HTML renderer: raw HTML as text, images as links, fenced and
// indented code highlighted.
type plainRenderer struct{}

// RegisterFuncs registers the renderer's nodes.
func (plainRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, rawHTML)
	reg.Register(ast.KindHTMLBlock, htmlBlock)
	reg.Register(ast.KindImage, image)
	reg.Register(ast.KindFencedCodeBlock, codeBlock)
	reg.Register(ast.KindCodeBlock, codeBlock)
}

// rawHTML writes an inline tag as the text it is.
func rawHTML(w util.BufWriter, source []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		segs := n.(*ast.RawHTML).Segments
		for i := range segs.Len() {
			s := segs.At(i)
			w.WriteString(html.EscapeString(string(s.Value(source))))
		}
	}
	return ast.WalkSkipChildren, nil
}

// htmlBlock writes a block of HTML as a paragraph of the text it is.
func htmlBlock(w util.BufWriter, source []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	b := n.(*ast.HTMLBlock)
	w.WriteString("<pre>")
	writeLines(w, n, source)
	if b.HasClosure() {
		w.WriteString(html.EscapeString(string(b.ClosureLine.Value(source))))
	}
	w.WriteString("</pre>\n")
	return ast.WalkSkipChildren, nil
}

// image writes an image as a link to it, its text the image's.
func image(w util.BufWriter, source []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	img := n.(*ast.Image)
	var alt strings.Builder
	ast.Walk(img, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if t, ok := c.(*ast.Text); ok && entering {
			alt.Write(t.Segment.Value(source))
		}
		return ast.WalkContinue, nil
	})
	text := strings.TrimSpace(alt.String())
	if text == "" {
		text = "image"
	}
	w.WriteString(`<a href="` + html.EscapeString(string(img.Destination)) + `">` + html.EscapeString(text) + "</a>")
	return ast.WalkSkipChildren, nil
}

// codeBlock writes a block of code, highlighted as its fence's language
// says when chroma knows it and the block is short enough.
func codeBlock(w util.BufWriter, source []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	var code strings.Builder
	for i := range n.Lines().Len() {
		line := n.Lines().At(i)
		code.Write(line.Value(source))
	}
	var lexer chroma.Lexer
	if f, ok := n.(*ast.FencedCodeBlock); ok && f.Info != nil && code.Len() <= highlightMost {
		if lang, _, _ := strings.Cut(string(f.Language(source)), " "); lang != "" {
			lexer = lexers.Get(lang)
		}
	}
	if lexer != nil {
		var out bytes.Buffer
		it, err := chroma.Coalesce(lexer).Tokenise(nil, code.String())
		if err == nil {
			err = codeFormatter.Format(&out, styles.Get(codeStyles[0]), it)
		}
		if err == nil { // else shown plain: chroma fails only on what it cannot lex
			w.WriteString(`<pre class="chroma"><code>`)
			w.Write(out.Bytes())
			w.WriteString("</code></pre>\n")
			return ast.WalkSkipChildren, nil
		}
	}
	w.WriteString("<pre><code>" + html.EscapeString(code.String()) + "</code></pre>\n")
	return ast.WalkSkipChildren, nil
}

// writeLines writes n's lines escaped.
func writeLines(w util.BufWriter, n ast.Node, source []byte) {
	for i := range n.Lines().Len() {
		line := n.Lines().At(i)
		w.WriteString(html.EscapeString(string(line.Value(source))))
	}
}
