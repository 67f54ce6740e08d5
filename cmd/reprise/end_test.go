package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestEndRejectsAnUnknownReasonAsUsage checks that end --reason with a
// reason it does not know is a usage error that names the reasons.
func TestEndRejectsAnUnknownReasonAsUsage(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	var stdout, stderr bytes.Buffer
	store := filepath.Join(t.TempDir(), "s.db")
	code := run(context.Background(), []string{"--store", store, "end", "--agent", "ide", "--reason", "bogus"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "user_exit") {
		t.Fatalf("exit %d, stderr %q; want a usage error listing the reasons", code, stderr.String())
	}
}
