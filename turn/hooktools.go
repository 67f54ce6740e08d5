package turn

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/reprise-dev/reprise"
)

// The bounds of what the agent hook tools read and answer.
const (
	maxToolOutput  = 64 << 10 // bytes of one tool's answer, its closing note included
	noteRoom       = 128      // bytes kept for the note that says where an answer was cut
	readLines      = 2000     // lines Read gives when no limit is asked
	maxLineChars   = 2000     // bytes of a line Read shows
	grepLineChars  = 300      // bytes of a line Grep shows
	maxGrepMatches = 200
	maxGlobFiles   = 200
	maxGrepFile    = 4 << 20 // bytes of a file Grep searches
	maxWalk        = 100_000 // entries Grep and Glob look at
	binaryProbe    = 8000    // bytes whose NUL marks a file binary
	maxPatterns    = 64      // patterns one glob's braces may expand to
)

// The schemas of the tools' inputs.
const (
	readSchema = `{"type": "object", "properties": {
  "file_path": {"type": "string", "description": "The file to read: a path relative to the directory, or an absolute path inside it."},
  "offset": {"type": "integer", "minimum": 1, "description": "The line number to start at, 1 for the first line. Give it only for a file too long to read at once."},
  "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read; 2000 when not given."}},
 "required": ["file_path"], "additionalProperties": false}`
	grepSchema = `{"type": "object", "properties": {
  "pattern": {"type": "string", "description": "The regular expression to search for, in RE2 syntax (Go's regexp): \\bfunc\\s+\\w+, (?i)todo for any case."},
  "path": {"type": "string", "description": "The file or directory to search, relative to the directory; the whole directory when not given."},
  "glob": {"type": "string", "description": "Search only the files that match: *.go matches file names anywhere, src/**/*.{ts,tsx} paths under the searched directory."}},
 "required": ["pattern"], "additionalProperties": false}`
	globSchema = `{"type": "object", "properties": {
  "pattern": {"type": "string", "description": "The pattern file paths must match, relative to path: * and ? within a name, ** for any number of directories, {a,b} for either, as in **/*.go or src/*.{ts,tsx}."},
  "path": {"type": "string", "description": "The directory to search in, relative to the directory; the whole directory when not given."}},
 "required": ["pattern"], "additionalProperties": false}`
)

// hookTools returns the specs and the tools of an agent hook that reads
// dir: Read, Grep and Glob, each confined to dir. A path that leaves it
// (absolute, through "..", or through a symlink) is refused, as are
// special files; what they answer is bounded.
func hookTools(dir string) ([]ToolSpec, map[string]Tool) {
	if dir != "" {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
	}
	d := dirTools{dir}
	specs := []ToolSpec{
		{Name: "Read", InputSchema: json.RawMessage(readSchema), Description: "Reads a text file under the directory and returns its lines, " +
			"each after its number and a tab. It gives at most 2000 lines and 64 KiB at once, each line cut at 2000 bytes: read a long file in parts " +
			"with offset and limit. It refuses directories (list them with Glob), binary and special files, and paths that lead outside the directory."},
		{Name: "Grep", InputSchema: json.RawMessage(grepSchema), Description: "Searches the files under the directory for lines that match a " +
			"regular expression and returns each as path:line:text, paths relative to the directory, at most 200 of them. It skips binary files, " +
			".git directories, symlinked directories and anything past a file's first 4 MiB."},
		{Name: "Glob", InputSchema: json.RawMessage(globSchema), Description: "Lists the files under the directory whose paths match a glob " +
			"pattern, such as **/*.go, relative to the directory and in order, at most 200 of them. It skips .git directories and does not " +
			"descend into symlinked directories."},
	}
	tools := map[string]Tool{"Read": dirTool(d, d.read), "Grep": dirTool(d, d.grep), "Glob": dirTool(d, d.glob)}
	return specs, tools
}

// dirTools are the tools that read one directory, dir (absolute; "" for
// none).
type dirTools struct{ dir string }

// dirTool makes run a Tool: it reads the call's input as In and runs
// with dir opened as a root that no path may leave; the text it returns
// is the call's output.
func dirTool[In any](d dirTools, run func(ctx context.Context, root *os.Root, in In) (string, error)) Tool {
	return Tool{Repeatable: true, Run: func(ctx context.Context, call Call) (reprise.ToolResult, error) {
		var in In
		if err := json.Unmarshal(call.Input, &in); err != nil {
			return reprise.ToolResult{}, fmt.Errorf("the input of %s does not fit its schema: %w", call.Name, err)
		}
		if d.dir == "" {
			return reprise.ToolResult{}, errors.New("there is no directory to read")
		}
		root, err := os.OpenRoot(d.dir)
		if err != nil {
			return reprise.ToolResult{}, fmt.Errorf("open the directory: %w", err)
		}
		defer root.Close()
		text, err := run(ctx, root, in)
		if err != nil {
			return reprise.ToolResult{}, err
		}
		out, _ := json.Marshal(text) // strings always marshal
		return reprise.ToolResult{Output: out}, nil
	}}
}

// local returns p, a path the model gave, as a path of d's root
// (slash-separated, "." for the root itself), or why it leaves the
// directory: absolute outside it, or climbing out with "..". Symlinks
// are the root's to refuse.
func (d dirTools) local(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if filepath.IsAbs(p) {
		rel, ok := within(d.dir, p)
		if !ok {
			// The directory by its real name, as a model that read a
			// path elsewhere may give it.
			if real, err := filepath.EvalSymlinks(d.dir); err == nil {
				rel, ok = within(real, p)
			}
		}
		if !ok {
			return "", fmt.Errorf("%s is outside %s, the only directory these tools read", p, d.dir)
		}
		p = rel
	}
	clean := filepath.Clean(p)
	if !filepath.IsLocal(clean) {
		return "", fmt.Errorf("%s leads outside %s, the only directory these tools read", p, d.dir)
	}
	return filepath.ToSlash(clean), nil
}

// within returns p relative to dir, and whether it lies in dir.
func within(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	return rel, err == nil && filepath.IsLocal(rel)
}

// refused words a root's error for name: most often a symlink that
// leads out of the directory.
func (d dirTools) refused(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s does not exist", name)
	}
	return fmt.Errorf("%s cannot be read: %w (no path, symlinks included, may lead outside %s)", name, err, d.dir)
}

// openRegular opens name in root for reading, if it is a regular file: a
// FIFO is opened without waiting for a writer, and refused with devices,
// sockets and directories.
func (d dirTools) openRegular(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, d.refused(name, err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		err = d.refused(name, err)
	case fi.IsDir():
		err = fmt.Errorf("%s is a directory: list it with Glob", name)
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("%s is not a regular file (%s): only files are read", name, fi.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readInput is the input of Read.
type readInput struct {
	FilePath string `json:"file_path"`
	Offset   int    `json:"offset"`
	Limit    int    `json:"limit"`
}

// read answers Read: the lines asked for, each numbered.
func (d dirTools) read(ctx context.Context, root *os.Root, in readInput) (string, error) {
	if in.FilePath == "" {
		return "", errors.New("file_path is required")
	}
	if in.Offset < 0 || in.Limit < 0 {
		return "", errors.New("offset and limit count lines from 1")
	}
	name, err := d.local(in.FilePath)
	if err != nil {
		return "", err
	}
	f, err := d.openRegular(root, name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	if head, _ := br.Peek(binaryProbe); bytes.IndexByte(head, 0) >= 0 {
		return "", fmt.Errorf("%s is a binary file: it is not shown", name)
	}
	first, limit := max(in.Offset, 1), in.Limit
	if limit == 0 {
		limit = readLines
	}
	var out strings.Builder
	n := 0
	for {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return "", err
			}
		}
		line, long, err := nextLine(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("read %s: %w", name, err)
		}
		n++
		if n < first {
			continue
		}
		mark := ""
		if long {
			mark = " [line cut]"
		}
		entry := fmt.Sprintf("%6d\t%s%s\n", n, line, mark)
		if out.Len()+len(entry) > maxToolOutput-noteRoom {
			fmt.Fprintf(&out, "(cut at %d KiB: read on with offset %d)\n", maxToolOutput>>10, n)
			return out.String(), nil
		}
		out.WriteString(entry)
		if n-first+1 == limit {
			if _, err := br.Peek(1); err == nil {
				fmt.Fprintf(&out, "(more lines follow: read on with offset %d)\n", n+1)
			}
			return out.String(), nil
		}
	}
	switch {
	case n == 0:
		return "(the file is empty)", nil
	case n < first:
		return fmt.Sprintf("(the file has %d lines: offset %d is past its end)", n, first), nil
	}
	return out.String(), nil
}

// nextLine reads br's next line without its end, at most maxLineChars
// bytes of it (long says it was cut), or io.EOF after the last one.
func nextLine(br *bufio.Reader) (line []byte, long bool, err error) {
	total := 0
	for {
		frag, more, err := br.ReadLine()
		if err != nil {
			if err == io.EOF && total > 0 {
				err = nil
			}
			return line, long, err
		}
		total += len(frag)
		if room := maxLineChars - len(line); room > 0 {
			line = append(line, frag[:min(room, len(frag))]...)
		}
		long = total > maxLineChars
		if !more {
			return line, long, nil
		}
	}
}

// grepInput is the input of Grep.
type grepInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
	Glob    string `json:"glob"`
}

// grep answers Grep: the matching lines of the files asked for.
func (d dirTools) grep(ctx context.Context, root *os.Root, in grepInput) (string, error) {
	if in.Pattern == "" {
		return "", errors.New("pattern is required")
	}
	re, err := regexp.Compile(in.Pattern)
	if err != nil {
		return "", fmt.Errorf("pattern: %w", err)
	}
	start, err := d.local(in.Path)
	if err != nil {
		return "", err
	}
	var match func(string) bool
	if in.Glob != "" {
		if match, err = globMatcher(in.Glob, !strings.Contains(in.Glob, "/")); err != nil {
			return "", err
		}
	}
	fi, err := root.Stat(start)
	if err != nil {
		return "", d.refused(start, err)
	}
	var out strings.Builder
	matches := 0
	cut := ""
	search := func(name string, explicit bool) error {
		f, err := d.openRegular(root, name)
		if err != nil {
			if explicit {
				return err
			}
			return nil // a special file or a symlink out: not searched
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxGrepFile))
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if bytes.IndexByte(data[:min(len(data), binaryProbe)], 0) >= 0 {
			return nil
		}
		for n, line := range bytes.Split(data, []byte("\n")) {
			if !re.Match(line) {
				continue
			}
			line = bytes.TrimSuffix(line, []byte("\r"))
			if len(line) > grepLineChars {
				line = append(line[:grepLineChars:grepLineChars], " [line cut]"...)
			}
			entry := fmt.Sprintf("%s:%d:%s\n", name, n+1, line)
			if matches == maxGrepMatches || out.Len()+len(entry) > maxToolOutput-noteRoom {
				cut = fmt.Sprintf("(cut at %d matches: narrow the pattern, the path or the glob)\n", matches)
				return fs.SkipAll
			}
			out.WriteString(entry)
			matches++
		}
		return nil
	}
	if !fi.IsDir() {
		if err := search(start, true); err != nil && err != fs.SkipAll {
			return "", err
		}
	} else {
		walked, err := d.walk(ctx, root, start, func(name, rel string) error {
			if match != nil && !match(rel) {
				return nil
			}
			return search(name, false)
		})
		if err != nil {
			return "", err
		}
		if walked && cut == "" {
			cut = fmt.Sprintf("(stopped after %d entries: narrow the path)\n", maxWalk)
		}
	}
	if matches == 0 && cut == "" {
		return "No matches", nil
	}
	return out.String() + cut, nil
}

// globInput is the input of Glob.
type globInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

// glob answers Glob: the files whose paths match, in order.
func (d dirTools) glob(ctx context.Context, root *os.Root, in globInput) (string, error) {
	if in.Pattern == "" {
		return "", errors.New("pattern is required")
	}
	start, err := d.local(in.Path)
	if err != nil {
		return "", err
	}
	pattern := in.Pattern
	if filepath.IsAbs(pattern) {
		// An absolute pattern inside the directory: from the directory.
		rel, ok := within(d.dir, pattern)
		if !ok {
			return "", fmt.Errorf("%s is outside %s, the only directory these tools read", pattern, d.dir)
		}
		pattern, start = filepath.ToSlash(rel), "."
	}
	match, err := globMatcher(pattern, false)
	if err != nil {
		return "", err
	}
	var found []string
	cut, err := d.walk(ctx, root, start, func(name, rel string) error {
		if match(rel) {
			found = append(found, name)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(found) == 0 {
		return "No files found", nil
	}
	slices.Sort(found)
	var out strings.Builder
	for i, name := range found {
		if i == maxGlobFiles || out.Len()+len(name)+1 > maxToolOutput-noteRoom {
			fmt.Fprintf(&out, "(cut at %d of %d files: narrow the pattern)\n", i, len(found))
			return out.String(), nil
		}
		out.WriteString(name + "\n")
	}
	if cut {
		fmt.Fprintf(&out, "(stopped after %d entries: narrow the path)\n", maxWalk)
	}
	return out.String(), nil
}

// walk calls visit with the name of each file under start in root
// (directories are walked, not visited), and its path relative to start;
// .git directories and symlinked ones are not walked. It looks at
// maxWalk entries at most, and says so when it stopped there. A visit's
// fs.SkipAll ends it.
func (d dirTools) walk(ctx context.Context, root *os.Root, start string, visit func(name, rel string) error) (cut bool, err error) {
	seen := 0
	err = fs.WalkDir(root.FS(), start, func(name string, e fs.DirEntry, err error) error {
		if err != nil {
			if name == start {
				return d.refused(start, err)
			}
			return nil // an unreadable entry: left out
		}
		if seen++; seen > maxWalk {
			cut = true
			return fs.SkipAll
		}
		if seen%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if e.IsDir() {
			if e.Name() == ".git" && name != start {
				return fs.SkipDir
			}
			return nil
		}
		rel := name
		if start != "." {
			rel = strings.TrimPrefix(name, start+"/")
		}
		return visit(name, rel)
	})
	if err == fs.SkipAll {
		err = nil
	}
	return cut, err
}

// globMatcher returns what matches slash-separated paths against
// pattern: "*", "?" and classes within a name, "**" for any number of
// names, "{a,b}" for either. With base, a path matches when its last
// name does.
func globMatcher(pattern string, base bool) (func(string) bool, error) {
	patterns, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	var split [][]string
	for _, p := range patterns {
		segs := strings.Split(strings.TrimPrefix(p, "./"), "/")
		for _, s := range segs {
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("glob %q: %w", pattern, err)
			}
		}
		split = append(split, segs)
	}
	return func(name string) bool {
		if base {
			name = path.Base(name)
		}
		names := strings.Split(name, "/")
		for _, segs := range split {
			if matchNames(segs, names) {
				return true
			}
		}
		return false
	}, nil
}

// matchNames reports whether names match the pattern's segments.
func matchNames(segs, names []string) bool {
	for len(segs) > 0 {
		if segs[0] == "**" {
			for len(segs) > 1 && segs[1] == "**" {
				segs = segs[1:]
			}
			for i := range len(names) + 1 {
				if matchNames(segs[1:], names[i:]) {
					return true
				}
			}
			return false
		}
		if len(names) == 0 {
			return false
		}
		if ok, _ := path.Match(segs[0], names[0]); !ok {
			return false
		}
		segs, names = segs[1:], names[1:]
	}
	return len(names) == 0
}

// expandBraces returns the patterns pattern's "{a,b}" groups stand for,
// at most maxPatterns of them.
func expandBraces(pattern string) ([]string, error) {
	open := strings.IndexByte(pattern, '{')
	if open < 0 {
		return []string{pattern}, nil
	}
	end := strings.IndexByte(pattern[open:], '}')
	if end < 0 {
		return nil, fmt.Errorf("glob %q: a { without its }", pattern)
	}
	end += open
	var out []string
	for _, alt := range strings.Split(pattern[open+1:end], ",") {
		rest, err := expandBraces(pattern[:open] + alt + pattern[end+1:])
		if err != nil {
			return nil, err
		}
		out = append(out, rest...)
		if len(out) > maxPatterns {
			return nil, fmt.Errorf("glob %q: its braces make more than %d patterns", pattern, maxPatterns)
		}
	}
	return out, nil
}
