//go:build !unix

package private

import "io/fs"

// NoFollow is no flag: this system has no O_NOFOLLOW.
const NoFollow = 0

// OwnedByUser reports true: owners are a Unix system's, and nothing here
// tells who owns a file, so every file counts as the user's.
func OwnedByUser(fs.FileInfo) bool { return true }

// TrustedOwner reports true, as OwnedByUser does.
func TrustedOwner(fs.FileInfo) bool { return true }

// OthersMayWrite reports false: modes are a Unix system's.
func OthersMayWrite(fs.FileInfo) bool { return false }

// CheckAncestors returns nil: modes and owners are a Unix system's, and
// nothing here tells who could replace a directory.
func CheckAncestors(string, error) error { return nil }
