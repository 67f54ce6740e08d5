package private

import (
	"io/fs"
	"testing"
)

func TestKindNamesEachFileType(t *testing.T) {
	for mode, want := range map[fs.FileMode]string{
		0o644:                             "a regular file",
		fs.ModeDir | 0o755:                "a directory",
		fs.ModeSymlink:                    "a symbolic link",
		fs.ModeNamedPipe:                  "a named pipe",
		fs.ModeDevice | fs.ModeCharDevice: "a device",
		fs.ModeSocket:                     "a socket",
		fs.ModeIrregular:                  "a special file",
	} {
		if got := Kind(mode); got != want {
			t.Errorf("Kind(%v) = %q, want %q", mode, got, want)
		}
	}
}
