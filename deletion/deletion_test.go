package deletion_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reprise-dev/reprise/deletion"
	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/lifecycle"
	"github.com/reprise-dev/reprise/projection"
	"github.com/reprise-dev/reprise/schema"
)

// testLog is a memory store the tests append to by hand.
type testLog struct {
	t     *testing.T
	store *eventlog.MemoryStore
}

func (l testLog) add(stream string, p schema.Payload, restore string) {
	l.t.Helper()
	head, err := l.store.Head(context.Background(), stream)
	if err != nil {
		l.t.Fatal(err)
	}
	rec, err := schema.NewRecord(stream, p, 1, restore)
	if err != nil {
		l.t.Fatal(err)
	}
	if _, err := l.store.Append(context.Background(), []eventlog.Expect{{Stream: stream, Seq: head}}, []eventlog.Record{rec}); err != nil {
		l.t.Fatal(err)
	}
}

func (l testLog) conversation(id string) *projection.Conversation {
	l.t.Helper()
	conv := projection.NewConversation(id)
	if err := l.store.ReadStream(context.Background(), projection.SessionStream(id), 1, conv.Apply); err != nil {
		l.t.Fatal(err)
	}
	return conv
}

// TestTombstoneEndsTheSessionOnce checks a deletion from start to end: the
// conversation given is caught up and marked, the stream ends with the
// tombstone, the id is taken for good, and a second deletion is
// ErrSessionDeleted.
func TestTombstoneEndsTheSessionOnce(t *testing.T) {
	ctx := context.Background()
	l := testLog{t, eventlog.NewMemoryStore()}
	l.add("session/a", &schema.SessionCreated{ID: "a"}, "")
	conv := l.conversation("a")
	l.add("session/a", &schema.MessageAppended{Message: schema.Message{UUID: "m1", Role: "user"}}, "") // after conv was read
	now := func() int64 { return 7 }
	var g deletion.Guard
	if err := deletion.Tombstone(ctx, l.store, now, conv, "why", &g); err != nil {
		t.Fatal(err)
	}
	if !conv.Deleted || conv.Head != 3 || len(conv.Messages) != 1 {
		t.Fatalf("conversation after the deletion: deleted %v, head %d, %d messages", conv.Deleted, conv.Head, len(conv.Messages))
	}
	if gone, err := deletion.Tombstoned(ctx, l.store, "a"); err != nil || !gone {
		t.Fatalf("Tombstoned = %v, %v", gone, err)
	}
	if err := deletion.Taken(ctx, l.store, "a"); !errors.Is(err, lifecycle.ErrSessionDeleted) {
		t.Errorf("Taken = %v, want ErrSessionDeleted", err)
	}
	if err := deletion.Tombstone(ctx, l.store, now, conv, "", &g); !errors.Is(err, lifecycle.ErrSessionDeleted) {
		t.Errorf("a second deletion: %v, want ErrSessionDeleted", err)
	}
	l.add("session/b", &schema.SessionCreated{ID: "b"}, "")
	if err := deletion.Taken(ctx, l.store, "b"); !errors.Is(err, lifecycle.ErrSessionExists) {
		t.Errorf("Taken = %v, want ErrSessionExists", err)
	}
}

// TestTombstoneRefusesASessionAnAgentIsRestoring checks the guard: a
// restore in flight to the session makes the deletion ErrSessionInUse,
// with nothing written, and a session no agent uses goes.
func TestTombstoneRefusesASessionAnAgentIsRestoring(t *testing.T) {
	ctx := context.Background()
	l := testLog{t, eventlog.NewMemoryStore()}
	l.add("session/a", &schema.SessionCreated{ID: "a"}, "")
	l.add("session/b", &schema.SessionCreated{ID: "b"}, "")
	l.add("agent/ide", &schema.SessionLoaded{Session: "a", Source: "startup"}, "r1")
	now := func() int64 { return 7 }
	var g deletion.Guard
	if err := deletion.Tombstone(ctx, l.store, now, l.conversation("a"), "", &g); !errors.Is(err, deletion.ErrSessionInUse) {
		t.Fatalf("deleting a session being restored: %v, want ErrSessionInUse", err)
	}
	if head, _ := l.store.Head(ctx, "session/a"); head != 1 {
		t.Fatalf("session/a head %d after a refused deletion", head)
	}
	if err := deletion.Tombstone(ctx, l.store, now, l.conversation("b"), "", &g); err != nil {
		t.Fatalf("deleting a session no agent uses: %v", err)
	}
}

// TestInactiveIsOldestFirst checks the retention rule's choice: the
// sessions last active before the cutoff, oldest first.
func TestInactiveIsOldestFirst(t *testing.T) {
	at := func(id string, ns int64) projection.SessionInfo {
		return projection.SessionInfo{ID: id, LastActivity: ns}
	}
	got := deletion.Inactive([]projection.SessionInfo{at("new", 30), at("b", 20), at("a", 10), at("edge", 25)}, time.Unix(0, 25))
	var ids []string
	for _, s := range got {
		ids = append(ids, s.ID)
	}
	if len(ids) != 2 || ids[0] != "a" || ids[1] != "b" {
		t.Fatalf("Inactive = %v, want [a b]", ids)
	}
	if deletion.Inactive(nil, time.Unix(0, 25)) != nil {
		t.Fatal("Inactive of no sessions is not nil")
	}
}
