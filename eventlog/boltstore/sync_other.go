//go:build !linux

package boltstore

import "os"

// datasync makes f's written bytes durable. On macOS, os.File.Sync issues
// F_FULLFSYNC, which flushes the drive's cache too, as a plain fsync there
// does not.
func datasync(f *os.File) error { return f.Sync() }

// preallocate sets f's length to size; the bytes read as zeros.
func preallocate(f *os.File, size int64) error { return f.Truncate(size) }
