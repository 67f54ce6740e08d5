package main

import "syscall"

// dieWithParent has the child killed when the agent dies, SIGKILL
// included. Linux sends the signal when the thread that started the
// child ends; Go's threads live as long as the process, as the agent
// locks no goroutine to a thread.
func dieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
