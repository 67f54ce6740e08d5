//go:build !unix

package private

import "io/fs"

// NoFollow is no flag: this system has no O_NOFOLLOW.
const NoFollow = 0

// OwnedByUser reports true: owners are a Unix system's, and nothing here
// tells who owns a file, so every file counts as the user's.
func OwnedByUser(fs.FileInfo) bool { return true }

// CheckAncestors returns nil: modes and owners are a Unix system's, and
// nothing here tells who could replace a directory.
func CheckAncestors(string, error) error { return nil }
