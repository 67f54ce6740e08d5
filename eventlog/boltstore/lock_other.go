//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package boltstore

import "os"

// unlock does nothing: where bbolt does not use flock, closing the file
// releases its lock.
func unlock(*os.File) {}
