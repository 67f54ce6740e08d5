package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reprise-dev/reprise/eventlog"
)

// maxCandidates is how many ids an ambiguous prefix's error lists.
const maxCandidates = 10

// errEnoughIDs stops the listing of ids once the answer is known.
var errEnoughIDs = errors.New("enough ids")

// resolveID returns the whole id of the session or agent (kind "session"
// or "agent") that id names in store, as git and docker take a commit or
// a container: an id that exists is itself, whatever else it begins; a
// prefix of exactly one id is that id. A prefix of no id comes back as it
// was given, for the command to report as it reports any unknown id; a
// prefix of several is an error that lists them. Deleted sessions count:
// their streams stay, and the command says they are deleted.
//
// It reads only the names of the streams that begin with the prefix.
func resolveID(ctx context.Context, store eventlog.Store, kind, id string) (string, error) {
	prefix := kind + "/"
	var found []string
	more := false
	err := store.Streams(ctx, prefix+id, func(s eventlog.StreamInfo) error {
		name := strings.TrimPrefix(s.Name, prefix)
		if !strings.HasPrefix(name, id) {
			return nil
		}
		if name == id {
			found, more = []string{id}, false
			return errEnoughIDs // in name order, an exact match comes first
		}
		if len(found) == maxCandidates {
			more = true
			return errEnoughIDs
		}
		found = append(found, name)
		return nil
	})
	if err != nil && !errors.Is(err, errEnoughIDs) {
		return "", err
	}
	switch {
	case len(found) == 0:
		return id, nil
	case len(found) == 1:
		return found[0], nil
	}
	list := strings.Join(found, ", ")
	if more {
		list += " and more"
	}
	return "", fmt.Errorf("%s id prefix %q is ambiguous: it begins the ids of several %ss: %s; give more of the id", kind, id, kind, list)
}
