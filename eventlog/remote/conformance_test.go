package remote

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/reprise-dev/reprise/eventlog"
	"github.com/reprise-dev/reprise/eventlog/boltstore"
	"github.com/reprise-dev/reprise/eventlog/storetest"
)

// throughService is a store whose appends go to a bbolt file and whose
// reads go through the read service of that file: the conformance suite
// run on it checks every read against the contract.
type throughService struct {
	*Client
	file *boltstore.Store
	srv  *Server
}

// Append writes to the file directly.
func (s *throughService) Append(ctx context.Context, expect []eventlog.Expect, recs []eventlog.Record) ([]eventlog.Event, error) {
	return s.file.Append(ctx, expect, recs)
}

// Index makes the file keep ix: the service reads indexes, the holder
// keeps them.
func (s *throughService) Index(ctx context.Context, ix eventlog.Indexer) error {
	x, ok := any(s.file).(eventlog.Indexed)
	if !ok {
		return eventlog.ErrReadOnly
	}
	return x.Index(ctx, ix)
}

// Close closes the client, then the server and the file; a second Close
// is the client's ErrClosed.
func (s *throughService) Close() error {
	if err := s.Client.Close(); err != nil {
		return err
	}
	return errors.Join(s.srv.Close(), s.file.Close())
}

func TestConformanceThroughTheService(t *testing.T) {
	storetest.Run(t, func(t *testing.T) eventlog.Store {
		path := filepath.Join(t.TempDir(), "events.db")
		file, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := Serve(file, path, slog.Default(), nil)
		if err != nil {
			t.Fatal(err)
		}
		client, err := Dial(context.Background(), srv.Path())
		if err != nil {
			t.Fatal(err)
		}
		return &throughService{Client: client, file: file, srv: srv}
	})
}
