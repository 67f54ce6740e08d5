//go:build !unix

package main

import "os/exec"

// inOwnGroup leaves cmd as it is: without Unix process groups only the
// command itself is killed when its context ends.
func inOwnGroup(*exec.Cmd) {}

// asServer leaves cmd as it is.
func asServer(*exec.Cmd) {}

// killServer kills cmd's process.
func killServer(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
