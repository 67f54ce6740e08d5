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
)
