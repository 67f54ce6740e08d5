//go:build !linux

package boltstore

// lockHolder returns 0 and "": only Linux tells who holds a file lock.
func lockHolder(string) (pid int, command string) { return 0, "" }
