// Package remote serves the read half of an eventlog.Store over HTTP, and
// reads it back as a read-only eventlog.Store, so that other processes can
// read a bbolt file while the process that holds it keeps writing.
//
// One read service has two transports. Handler is a plain net/http handler
// over any Store: a host mounts it wherever it likes, such as a web view
// over TCP. Serve mounts it on a Unix socket whose address follows from the
// store's path (SocketPath), which is how the reprise command reaches a
// store another process holds; Dial connects to that socket.
//
// # Usage
//
// The process holding the store:
//
//	srv, err := remote.Serve(store, path, slog.Default(), nil)
//	...
//	defer srv.Close(ctx)
//
// Another process:
//
//	client, err := remote.Dial(ctx, remote.SocketPath(path))
//	if errors.Is(err, remote.ErrNotServing) {
//		// nobody serves the store: open the file, or wait for it
//	}
//	defer client.Close()
//	err = client.ReadAll(ctx, 1, fn)
//
// # Protocol
//
// Every request is a GET; every response body of the reads is a stream of
// msgpack arrays, one a frame, ending in an end frame:
//
//	GET /v1/ping                          -> end
//	GET /v1/head?stream=S                 -> head, end
//	GET /v1/streams?prefix=P              -> stream*, end
//	GET /v1/events?stream=S&from=N        -> event*, end      (ReadStream)
//	GET /v1/events?from=N[&wait=D]        -> event*, end      (ReadAll)
//
//	event  [1, stream, seq, position, type, version, time, restore id, payload]
//	stream [2, name, head]
//	head   [3, head]
//	end    [0]
//	error  [4, code, message]
//
// Beside the reads, a holder may answer its store's searches (Serve's
// search handler, package search's Held):
//
//	GET /v1/search?q=Q&limit=N&offset=N   -> JSON, in search's protocol; 404 when it serves none
//
// A ReadAll with wait, a Go duration of at most MaxWait, waits that long
// for the first event at or after from when there is none yet: that is how
// a follower learns of appends without asking again and again. Payload
// bytes are sent as the store holds them. A response cut before its end
// frame is ErrDisconnected at the client, never a short read; one that
// stops coming (a stalled serving process) is ErrStalled, which matches
// ErrDisconnected too, once FrameTimeout passes without its header or
// first frame (plus the wait asked for) or without its next frame, the
// time the caller's own callback takes aside. An error
// before the first frame also sets the status code (400 for a bad request,
// 503 for a closed store, 500 otherwise); an error after it comes as an
// error frame. Error codes map back to eventlog's sentinel errors.
//
// # Caveats
//
// The service reads; nothing in it writes, and a Client's Append is
// eventlog.ErrReadOnly. It has no authentication of its own: Serve's
// socket is private to the user (0600, and Dial refuses one owned by
// another user), and a host that mounts Handler elsewhere must guard it
// itself. A ReadAll over the service reads one snapshot of the store, like
// the store's own; a follower's successive reads are successive snapshots.
package remote
