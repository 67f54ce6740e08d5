package reprise_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/remote"
	"github.com/reprise-dev/reprise/internal/testkit"
)

func TestServeReadsWhileTheEngineHoldsTheFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "reprise.db")
	e, err := reprise.Open(path, reprise.Options{ServeReads: true, Logger: testkit.Discard})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Session(t, e, "s", "", "hello", "hi")
	if _, err := reprise.Open(path, reprise.Options{ReadOnly: true, LockTimeout: 10e6}); !errors.Is(err, eventlog.ErrLocked) {
		t.Fatalf("a second open while the Engine holds the file: err = %v, want ErrLocked", err)
	}
	client, err := remote.Dial(ctx, remote.SocketPath(path))
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	reader := reprise.New(client, reprise.Options{Logger: testkit.Discard})
	defer reader.Close()
	msgs, err := reader.Conversation(ctx, "s")
	if err != nil || len(msgs) != 2 || msgs[1].Content[0].Text != "hi" {
		t.Fatalf("the conversation through the socket: %v, %v", msgs, err)
	}
	if _, err := reader.Append(ctx, "s", reprise.Text("user", "x")); !errors.Is(err, eventlog.ErrReadOnly) {
		t.Errorf("Append through the socket: err = %v, want ErrReadOnly", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(remote.SocketPath(path)); !os.IsNotExist(err) {
		t.Errorf("the socket outlives the Engine: %v", err)
	}
	if _, err := reader.Sessions(ctx); !errors.Is(err, remote.ErrNotServing) {
		t.Errorf("a read after the Engine closed: err = %v, want ErrNotServing", err)
	}
}

func TestServeReadsIsOffByDefault(t *testing.T) {
	_, path := testkit.NewEngine(t, reprise.Options{Logger: testkit.Discard})
	if _, err := os.Lstat(remote.SocketPath(path)); !os.IsNotExist(err) {
		t.Errorf("an Engine serves reads unasked: %v", err)
	}
}
