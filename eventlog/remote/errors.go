package remote

import "errors"

var (
	// ErrNotServing is returned by Dial when no process answers at the
	// socket: there is none, or the process that made it is gone.
	ErrNotServing = errors.New("no process serves the store's reads")

	// ErrNotOwned is returned by Dial and Serve for a socket path that
	// holds something other than a socket, or a socket of another user,
	// which could be a decoy planted to answer with false data.
	ErrNotOwned = errors.New("the socket is not the user's own")

	// ErrDisconnected is returned when the connection to the serving
	// process broke before a response was complete.
	ErrDisconnected = errors.New("the connection to the serving process broke")

	// ErrStalled is returned when the serving process sent nothing for
	// FrameTimeout while a response was due: before its first frame (and
	// the wait a following read asked for) or between two frames. The
	// connection is dropped, so the error matches ErrDisconnected too.
	ErrStalled = errors.New("the serving process stalled")
)

// errStalled is the cause a read's deadline cancels its request with.
var errStalled = errors.New("remote: frame deadline passed")
