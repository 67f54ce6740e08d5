package transfer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/transfer"
)

// TestImportThenExportOnAStoreAlone checks the package on a store with no
// Engine above it: a transcript imported into a session is exported as the
// same lines, the id is then taken, and a session that does not exist is
// not exported.
func TestImportThenExportOnAStoreAlone(t *testing.T) {
	ctx := context.Background()
	store := eventlog.NewMemoryStore()
	now := func() int64 { return 1 }
	data, err := os.ReadFile("../testdata/transcripts/every-record.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := transfer.Import(ctx, store, now, bytes.NewReader(data), transfer.ImportOptions{ID: "s1", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Session != "s1" || rep.Messages == 0 || rep.Bytes != int64(len(data)) {
		t.Fatalf("report %+v", rep)
	}
	var out bytes.Buffer
	if err := transfer.Export(ctx, store, "s1", &out); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), data) {
		t.Errorf("export differs from the import:\n%s\nwant\n%s", out.Bytes(), data)
	}
	_, err = transfer.Import(ctx, store, now, bytes.NewReader(data), transfer.ImportOptions{ID: "s1", Cwd: "/w"})
	if !errors.Is(err, lifecycle.ErrSessionExists) {
		t.Errorf("import into a taken id: %v, want ErrSessionExists", err)
	}
	if err := transfer.Export(ctx, store, "missing", &out); !errors.Is(err, lifecycle.ErrSessionNotFound) {
		t.Errorf("export of a missing session: %v, want ErrSessionNotFound", err)
	}
}
