package boltstore

import (
	"context"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// applied returns s's bbolt database once it holds every append
// acknowledged so far, for tests that look at the file itself.
func (s *Store) applied(tb testing.TB) *bolt.DB {
	tb.Helper()
	if err := s.caughtUp(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return s.db
}
