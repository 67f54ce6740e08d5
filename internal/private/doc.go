// Package private holds the checks that keep the files reprise writes
// beside a store out of other users' reach: whether a file is the user's
// own, and whether the directories above a path could let another user
// rename it away and put theirs in its place. The transcript directory
// (package reprise) and the bbolt store's file (package boltstore) are
// checked by the same functions.
//
// # Usage
//
//	if err := private.CheckAncestors(path, ErrNotPrivate); err != nil {
//		return err // wraps ErrNotPrivate when a parent is refused
//	}
//	if !private.OwnedByUser(info) { ... }
//
// # Caveats
//
// The checks are as good as the moment they run: a caller opens what it
// checked without following links (O_NOFOLLOW) and checks what it opened
// (its Stat), so that nothing can be swapped in between. Symbolic links
// among the parents are resolved, so /tmp and macOS's /var, a link to
// /private/var, work. They are a Unix system's: elsewhere (a build for
// Windows, which reprise does not support at run time) nothing is
// checked, and every file counts as the user's.
package private
