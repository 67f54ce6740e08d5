package files

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/reprise-dev/reprise/internal/private"
)

// Files is the Engine's file seam: the files it keeps beside the log, each
// a plain name in one directory. They are the transcripts hooks read
// (<session>.jsonl), the CLAUDE_ENV_FILE of each SessionStart run
// (<session>.env-<restore id>) and hook output too long to inject
// (<session>-hook-<id>.txt). Dir is the real
// one; NewMemory is its in-memory twin for tests. Methods are safe for
// concurrent use on different names.
type Files interface {
	// Path returns where name lives, as hooks are told.
	Path(name string) string
	// Replace writes name anew through write. Readers see the old file or
	// the whole new one, never a part.
	Replace(name string, write func(io.Writer) error) error
	// Append adds to name through write. It fails with an error matching
	// fs.ErrNotExist, writing nothing, when name does not exist.
	Append(name string, write func(io.Writer) error) error
	// Read returns name's content: an error matching fs.ErrNotExist when
	// it does not exist, ErrFileTooLarge past MaxRead bytes.
	Read(name string) ([]byte, error)
	// Remove deletes name; one that does not exist is no error. A symbolic
	// link is removed, not followed.
	Remove(name string) error
	// List returns the names that start with prefix, in name order.
	List(prefix string) ([]string, error)
	// Close releases the files; a private temporary directory is removed.
	Close() error
}

// MaxRead is the most Files.Read returns: what a hook writes to
// CLAUDE_ENV_FILE is recorded in the log, so it is capped.
const MaxRead = 1 << 20

var (
	// ErrFileTooLarge is returned by Files.Read for a file over MaxRead.
	ErrFileTooLarge = errors.New("reprise: file too large")

	// ErrNotPrivate is returned by Dir when its directory, or a file
	// it would replace, is not the user's own: a symbolic link, not a
	// directory or regular file, owned by another user, or a directory
	// that group or others may write. Nothing is written then. On a system
	// that is not a Unix, such as Windows, owners and modes do not say
	// whether a directory is private: Dir makes none, and refuses
	// one that exists, with this error.
	ErrNotPrivate = errors.New("reprise: not a private file")

	// ErrFileName is returned by Files for a name that is not one plain
	// path element.
	ErrFileName = errors.New("reprise: invalid file name")
)

// checkName rejects names that could leave the directory.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return fmt.Errorf("%w: %q", ErrFileName, name)
	}
	return nil
}

// dirFiles keeps files in one directory that only the user may enter. It
// never follows a symbolic link and reads only regular files.
type dirFiles struct {
	mu      sync.Mutex
	dir     string // "" until a temporary directory is made
	temp    bool   // dir is private to this value and removed on Close
	checked bool   // dir exists and is a directory, not a link
}

// Dir returns the Files of directory dir, which is created (mode 0700)
// on first write. Package reprise's Engine uses it for
// Options.TranscriptDir. A dir that
// is a symbolic link, belongs to another user or may be written by group
// or others is refused with ErrNotPrivate, before anything is written: in a
// shared directory such as /tmp another user could otherwise have made it
// first, with links planted inside. Files are opened without following
// links, and only regular files the user owns are written, read or
// replaced.
//
// A relative dir is made absolute against the working directory of the
// call: hooks run in their session's directory, and the paths they are
// given must lead to the same files from there.
func Dir(dir string) Files {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &dirFiles{dir: dir}
}

// Temp returns Files in a private temporary directory, made on first
// use and removed by Close.
func Temp() Files { return &dirFiles{temp: true} }

func (d *dirFiles) Path(name string) string {
	if d.temp {
		_, _ = d.directory(true) // a temporary directory gets its name when made
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return filepath.Join(d.dir, name)
}

// directory returns the directory, making it when create is set. A
// directory that is not private (checkPrivate) is refused.
func (d *dirFiles) directory(create bool) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.checked {
		return d.dir, nil
	}
	if d.temp && d.dir == "" {
		if !create {
			return "", nil
		}
		if err := checkFilesPlatform(os.TempDir()); err != nil {
			return "", err
		}
		dir, err := os.MkdirTemp("", "reprise-")
		if err != nil {
			return "", fmt.Errorf("reprise: temporary directory: %w", err)
		}
		d.dir, d.checked = dir, true
		return dir, nil
	}
	info, err := os.Lstat(d.dir)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := checkFilesPlatform(d.dir); err != nil {
			return d.dir, err
		}
		if err := os.MkdirAll(d.dir, 0o700); err != nil {
			return "", fmt.Errorf("reprise: %w", err)
		}
		info, err = os.Lstat(d.dir)
	}
	if err != nil {
		return d.dir, fmt.Errorf("reprise: %w", err)
	}
	if err := checkPrivate(d.dir, info); err != nil {
		return d.dir, err
	}
	d.checked = true
	return d.dir, nil
}

func (d *dirFiles) Replace(name string, write func(io.Writer) error) error {
	if err := checkName(name); err != nil {
		return err
	}
	dir, err := d.directory(true)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, name)
	tmp := path + ".tmp"
	err = writeFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, write)
	if errors.Is(err, fs.ErrNotExist) { // the directory went away (a tmp cleaner): make it again, once
		d.mu.Lock()
		d.checked = false
		d.mu.Unlock()
		if _, derr := d.directory(true); derr != nil {
			return derr
		}
		err = writeFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, write)
	}
	if errors.Is(err, fs.ErrExist) { // a leftover of a crash, or a planted file: never written through
		_ = os.Remove(tmp)
		err = writeFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, write)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := checkReplaceable(path); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("reprise: %w", err)
	}
	return nil
}

func (d *dirFiles) Append(name string, write func(io.Writer) error) error {
	if err := checkName(name); err != nil {
		return err
	}
	dir, err := d.directory(false)
	if err != nil {
		return err
	}
	if dir == "" {
		return fmt.Errorf("reprise: %s: %w", name, fs.ErrNotExist)
	}
	return writeFile(filepath.Join(dir, name), os.O_WRONLY|os.O_APPEND, write)
}

// checkReplaceable refuses to rename over path unless it is missing or a
// regular file the user owns: a symbolic link, a FIFO or another user's
// file stays as it is. Nobody else can change the private directory
// between this check and the rename.
func checkReplaceable(path string) error {
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("reprise: %w", err)
	case !info.Mode().IsRegular():
		return fmt.Errorf("%w: %s is not a regular file but %s; remove it", ErrNotPrivate, path, private.Kind(info.Mode()))
	case !private.OwnedByUser(info):
		return fmt.Errorf("%w: %s belongs to another user", ErrNotPrivate, path)
	}
	return nil
}

// writeFile opens path with flags, never through a symbolic link nor
// waiting on a FIFO, and writes it through write, buffered.
func writeFile(path string, flags int, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, flags|safeOpenFlags, 0o600)
	if err != nil {
		return fmt.Errorf("reprise: %w", err)
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() || !private.OwnedByUser(info) {
		f.Close()
		return fmt.Errorf("%w: %s is not a regular file of the user's", ErrNotPrivate, path)
	}
	w := bufio.NewWriter(f)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (d *dirFiles) Read(name string) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	dir, err := d.directory(false)
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, fmt.Errorf("reprise: %s: %w", name, fs.ErrNotExist)
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDONLY|safeOpenFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("reprise: %w", err)
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil, fmt.Errorf("reprise: %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxRead+1))
	if err != nil {
		return nil, fmt.Errorf("reprise: %w", err)
	}
	if len(data) > MaxRead {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrFileTooLarge, path, MaxRead)
	}
	return data, nil
}

func (d *dirFiles) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	dir, err := d.directory(false)
	if dir == "" || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reprise: %w", err)
	}
	return nil
}

func (d *dirFiles) List(prefix string) ([]string, error) {
	dir, err := d.directory(false)
	if dir == "" || errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reprise: %w", err)
	}
	var names []string
	for _, ent := range entries {
		if !ent.IsDir() && strings.HasPrefix(ent.Name(), prefix) {
			names = append(names, ent.Name())
		}
	}
	return names, nil
}

func (d *dirFiles) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.temp || d.dir == "" {
		return nil
	}
	err := os.RemoveAll(d.dir)
	d.dir, d.checked = "", false
	return err
}

// memoryFiles is the in-memory twin of Dir.
type memoryFiles struct {
	mu    sync.Mutex
	files map[string][]byte
}

// NewMemory returns Files that live in memory, for tests: they keep
// the contract of Dir, and Path names a file that does not exist on
// disk.
func NewMemory() Files { return &memoryFiles{files: map[string][]byte{}} }

func (m *memoryFiles) Path(name string) string { return "/memory/" + name }

func (m *memoryFiles) Replace(name string, write func(io.Writer) error) error {
	if err := checkName(name); err != nil {
		return err
	}
	var b strings.Builder
	if err := write(&b); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[name] = []byte(b.String())
	return nil
}

func (m *memoryFiles) Append(name string, write func(io.Writer) error) error {
	if err := checkName(name); err != nil {
		return err
	}
	m.mu.Lock()
	_, ok := m.files[name]
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("reprise: %s: %w", name, fs.ErrNotExist)
	}
	var b strings.Builder
	if err := write(&b); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[name] = append(m.files[name], b.String()...)
	return nil
}

func (m *memoryFiles) Read(name string) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	data, ok := m.files[name]
	switch {
	case !ok:
		return nil, fmt.Errorf("reprise: %s: %w", name, fs.ErrNotExist)
	case len(data) > MaxRead:
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrFileTooLarge, name, MaxRead)
	}
	return append([]byte(nil), data...), nil
}

func (m *memoryFiles) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.files, name)
	return nil
}

func (m *memoryFiles) List(prefix string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for name := range m.files {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

func (m *memoryFiles) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.files)
	return nil
}
