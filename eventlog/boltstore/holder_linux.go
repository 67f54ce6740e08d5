package boltstore

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// maxCommandLen bounds the holder's command line in an error message.
const maxCommandLen = 200

// lockHolder returns the process that holds a flock on the file at path,
// as /proc/locks tells, preferring a writer, and its command line; 0 and ""
// when none is found. Processes of other pid namespaces are not seen.
func lockHolder(path string) (pid int, command string) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, ""
	}
	pid = flockHolder("/proc/locks", uint64(st.Dev), st.Ino)
	if pid <= 0 {
		return 0, ""
	}
	return pid, commandLine(pid)
}

// flockHolder scans a /proc/locks file for flocks held (not waited for)
// on the file dev:ino, and returns the pid of a writer, else of a reader.
// Its lines read "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF", the
// device's major and minor numbers in hex; waiters' lines have "->" after
// the number.
func flockHolder(locks string, dev, ino uint64) int {
	f, err := os.Open(locks)
	if err != nil {
		return 0
	}
	defer f.Close()
	file := fmt.Sprintf("%02x:%02x:%d", major(dev), minor(dev), ino)
	reader := 0
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[5] != file {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil || pid <= 0 {
			continue
		}
		if fields[3] == "WRITE" {
			return pid
		}
		if reader == 0 {
			reader = pid
		}
	}
	return reader
}

// major and minor split a Linux device number as the kernel encodes it.
func major(dev uint64) uint64 { return (dev>>8)&0xfff | (dev>>32)&^0xfff }
func minor(dev uint64) uint64 { return dev&0xff | (dev>>12)&^0xff }

// commandLine returns process pid's command line, its arguments joined by
// spaces and cut to maxCommandLen characters, or "" when it cannot be read.
func commandLine(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	cmd := strings.ToValidUTF8(string(bytes.ReplaceAll(bytes.TrimRight(b, "\x00"), []byte{0}, []byte(" "))), "?")
	if r := []rune(cmd); len(r) > maxCommandLen {
		cmd = string(r[:maxCommandLen-1]) + "…"
	}
	return cmd
}
