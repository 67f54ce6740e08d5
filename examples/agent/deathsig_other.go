//go:build unix && !linux

package main

import "syscall"

// dieWithParent does nothing: here a server outlives a killed agent
// until it reads the end of its standard input.
func dieWithParent(*syscall.SysProcAttr) {}
