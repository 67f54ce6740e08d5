package reprise

import "github.com/reprise-dev/reprise/files"

// Files is the Engine's file seam, as package files defines it.
type Files = files.Files

// MaxFileRead is the most Files.Read returns.
const MaxFileRead = files.MaxRead

// The file layer's errors, as package files defines them.
var (
	ErrFileTooLarge = files.ErrFileTooLarge
	ErrNotPrivate   = files.ErrNotPrivate
	ErrFileName     = files.ErrFileName
)

// DirFiles returns the Files of directory dir: see files.Dir.
func DirFiles(dir string) Files { return files.Dir(dir) }

// NewMemoryFiles returns Files that live in memory: see files.NewMemory.
func NewMemoryFiles() Files { return files.NewMemory() }
