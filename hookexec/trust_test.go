package hookexec_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/reprise-dev/reprise/hookexec"
)

const trustSettings = `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo ran"}]}]}}`

// nobody is a user id that is neither the running user's nor root's.
const nobody = 65534

// project makes dir/.claude/settings.json with the modes given and returns
// the file's path.
func project(t *testing.T, dir string, dirMode, fileMode os.FileMode) string {
	t.Helper()
	path := filepath.Join(dir, ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(trustSettings), 0o644); err != nil {
		t.Fatal(err)
	}
	for p, m := range map[string]os.FileMode{path: fileMode, dir: dirMode} {
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// chownAll gives dir and everything in it to uid; only root can.
func chownAll(t *testing.T, dir string, uid int) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("giving files to another user needs root")
	}
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Settings another user could have written are refused, naming the file
// and why; the user's own, in a directory only they write, load.
func TestSettingsAnotherUserCouldWriteAreRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("owners and modes are a Unix system's")
	}
	t.Run("own", func(t *testing.T) {
		path := project(t, t.TempDir(), 0o755, 0o644)
		hooks, err := hookexec.LoadSettings(path)
		if err != nil || len(hooks) != 1 {
			t.Fatalf("own settings: %d hooks, %v", len(hooks), err)
		}
	})
	for name, tc := range map[string]struct {
		dirMode, fileMode os.FileMode
		owner             bool // give the project to another user
	}{
		"file others may write":              {0o755, 0o666, false},
		"file the group may write":           {0o755, 0o664, false},
		"project others may write":           {0o777, 0o644, false},
		"project of another user":            {0o755, 0o644, true},
		"project re-created by another user": {0o755, 0o644, true},
	} {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			if name == "project re-created by another user" {
				// A shared sticky directory, as /tmp is: the owner's
				// project went away, and another user made it again.
				if err := os.Chmod(parent, 0o1777); err != nil {
					t.Fatal(err)
				}
			}
			dir := filepath.Join(parent, "proj")
			path := project(t, dir, tc.dirMode, tc.fileMode)
			if tc.owner {
				chownAll(t, dir, nobody)
			}
			hooks, err := hookexec.LoadSettings(path)
			if !errors.Is(err, hookexec.ErrUntrusted) || len(hooks) != 0 {
				t.Fatalf("got %d hooks, error %v; want ErrUntrusted", len(hooks), err)
			}
			t.Log(err)
			// LoadAll, which the Engine and the CLI read settings with,
			// reports the file and loads nothing of it.
			hooks, errs := hookexec.LoadAll([]string{path}, nil)
			if len(hooks) != 0 || len(errs) != 1 || !errors.Is(errs[0], hookexec.ErrUntrusted) {
				t.Fatalf("LoadAll: %d hooks, errors %v", len(hooks), errs)
			}
		})
	}
}

// A settings file that is a link into a directory others may write is
// refused as the file it leads to would be.
func TestALinkToSettingsOthersCouldWriteIsRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("owners and modes are a Unix system's")
	}
	open := filepath.Join(t.TempDir(), "open")
	target := project(t, open, 0o777, 0o644)
	link := filepath.Join(t.TempDir(), "settings.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := hookexec.LoadSettings(link); !errors.Is(err, hookexec.ErrUntrusted) {
		t.Fatalf("a link into a directory others may write: %v, want ErrUntrusted", err)
	}
}
