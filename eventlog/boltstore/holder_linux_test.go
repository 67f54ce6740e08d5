package boltstore

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFlockHolderPrefersTheWriterAndSkipsWaiters(t *testing.T) {
	dev := uint64(0xfe)<<8 | 0x01 // fe:01
	locks := filepath.Join(t.TempDir(), "locks")
	for _, tt := range []struct {
		name, locks string
		want        int
	}{
		{"writer", "1: FLOCK  ADVISORY  WRITE 4242 fe:01:77 0 EOF\n", 4242},
		{"other file", "1: FLOCK  ADVISORY  WRITE 4242 fe:01:78 0 EOF\n", 0},
		{"posix lock", "1: POSIX  ADVISORY  WRITE 4242 fe:01:77 0 EOF\n", 0},
		{"waiter", "1: FLOCK  ADVISORY  READ 11 fe:01:77 0 EOF\n1: -> FLOCK  ADVISORY  WRITE 4242 fe:01:77 0 EOF\n", 11},
		{"readers and a writer", "1: FLOCK  ADVISORY  READ 11 fe:01:77 0 EOF\n2: FLOCK  ADVISORY  WRITE 12 fe:01:77 0 EOF\n", 12},
		{"garbage", "1: FLOCK\n2: FLOCK ADVISORY WRITE x fe:01:77 0 EOF\n", 0},
	} {
		if err := os.WriteFile(locks, []byte(tt.locks), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := flockHolder(locks, dev, 77); got != tt.want {
			t.Errorf("%s: holder = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestCommandLineIsCut(t *testing.T) {
	cmd := commandLine(os.Getpid())
	if cmd == "" || len([]rune(cmd)) > maxCommandLen {
		t.Errorf("commandLine(self) = %q", cmd)
	}
	if got := commandLine(-1); got != "" {
		t.Errorf("commandLine(-1) = %q, want \"\"", got)
	}
}
