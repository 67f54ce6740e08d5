package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/reprise-dev/reprise/eventlog"
)

// Client is a read-only eventlog.Store that reads through the service of
// another process. It is safe for concurrent use. Append returns
// eventlog.ErrReadOnly; errors the serving store returned match the same
// eventlog sentinels they matched there.
type Client struct {
	http   *http.Client
	socket string
	closed atomic.Bool
}

var (
	_ eventlog.Store   = (*Client)(nil)
	_ eventlog.Indexed = (*Client)(nil)
)

// pingTimeout bounds how long Dial waits for the service to answer.
const pingTimeout = 5 * time.Second

// FrameTimeout bounds how long a read waits for each part of a response:
// its header and first frame (plus the wait of a following ReadAll), and
// then each next frame. A serving process that sends nothing for that long
// has stalled, and the read fails with ErrStalled. The time the caller's
// callback takes is not counted.
const FrameTimeout = 10 * time.Second

// frameTimeout is FrameTimeout; tests shorten it.
var frameTimeout = FrameTimeout

// Dial connects to the service at socket, the path of a Unix socket, and
// checks that it answers, waiting up to pingTimeout. It fails with
// ErrNotOwned for a path that is not a socket of the user's own, and
// ErrNotServing when nothing answers there.
func Dial(ctx context.Context, socket string) (*Client, error) {
	if err := checkSocket(socket); err != nil {
		return nil, err
	}
	var d net.Dialer
	c := &Client{socket: socket, http: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socket)
		},
		DisableCompression: true,
	}}}
	ping, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := c.get(ping, "/v1/ping", nil, 0, nil); err != nil {
		c.http.CloseIdleConnections()
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: %s did not answer within %v", ErrNotServing, socket, pingTimeout)
		}
		return nil, err
	}
	return c, nil
}

// Append returns eventlog.ErrReadOnly: the service only reads.
func (c *Client) Append(ctx context.Context, _ []eventlog.Expect, _ []eventlog.Record) ([]eventlog.Event, error) {
	if c.closed.Load() {
		return nil, eventlog.ErrClosed
	}
	return nil, eventlog.ErrReadOnly
}

// Head implements eventlog.Store.
func (c *Client) Head(ctx context.Context, stream string) (uint64, error) {
	var head uint64
	err := c.get(ctx, "/v1/head", url.Values{"stream": {stream}}, 0, func(fr frame) error {
		if fr.kind != frameHead {
			return unexpected(fr)
		}
		head = fr.head
		return nil
	})
	return head, err
}

// ReadStream implements eventlog.Store.
func (c *Client) ReadStream(ctx context.Context, stream string, from uint64, fn func(eventlog.Event) error) error {
	q := url.Values{"stream": {stream}, "from": {strconv.FormatUint(from, 10)}}
	return c.get(ctx, "/v1/events", q, 0, events(fn))
}

// ReadAll implements eventlog.Store. The events are those of one snapshot
// of the serving store.
func (c *Client) ReadAll(ctx context.Context, from uint64, fn func(eventlog.Event) error) error {
	return c.WaitAll(ctx, from, 0, fn)
}

// WaitAll is ReadAll, except that when the store holds no event at or
// after from yet, it waits up to wait (at most MaxWait) for one to be
// appended. A follower calls it again and again from the position after
// the last event it saw.
func (c *Client) WaitAll(ctx context.Context, from uint64, wait time.Duration, fn func(eventlog.Event) error) error {
	q := url.Values{"from": {strconv.FormatUint(from, 10)}}
	wait = min(max(wait, 0), MaxWait)
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	return c.get(ctx, "/v1/events", q, wait, events(fn))
}

// Streams implements eventlog.Store.
func (c *Client) Streams(ctx context.Context, prefix string, fn func(eventlog.StreamInfo) error) error {
	return c.get(ctx, "/v1/streams", url.Values{"prefix": {prefix}}, 0, func(fr frame) error {
		if fr.kind != frameStream {
			return unexpected(fr)
		}
		return fn(fr.stream)
	})
}

// Index returns eventlog.ErrReadOnly: the serving process keeps the
// store's indexes.
func (c *Client) Index(context.Context, eventlog.Indexer) error {
	if c.closed.Load() {
		return eventlog.ErrClosed
	}
	return eventlog.ErrReadOnly
}

// ReadIndex implements eventlog.Indexed. A serving process of a build
// that serves no indexes answers as a store that keeps none:
// eventlog.ErrNoIndex.
func (c *Client) ReadIndex(ctx context.Context, name string, fn func(key string, value []byte) error) (uint64, error) {
	var last uint64
	err := c.get(ctx, "/v1/index", url.Values{"name": {name}}, 0, func(fr frame) error {
		switch fr.kind {
		case frameRow:
			return fn(fr.key, fr.value)
		case frameHead:
			last = fr.head
			return nil
		}
		return unexpected(fr)
	})
	var older *oldServer
	if errors.As(err, &older) && older.status == http.StatusNotFound {
		return 0, fmt.Errorf("%w: %s serves no indexes", eventlog.ErrNoIndex, c.socket)
	}
	return last, err
}

// Get sends a GET of path, with query q, to the serving process, for what
// it serves beside the reads (SearchPath), and returns the response as it
// comes, whatever its status; the caller closes its body. Only ctx bounds
// it, not FrameTimeout: a search may first build its index. A connection
// that fails matches ErrNotServing.
func (c *Client) Get(ctx context.Context, path string, q url.Values) (*http.Response, error) {
	if c.closed.Load() {
		return nil, eventlog.ErrClosed
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://reprise"+path+"?"+q.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w at %s: %w", ErrNotServing, c.socket, err)
	}
	return resp, nil
}

// oldServer is the answer, in plain HTTP rather than frames, of a serving
// process to a request it does not know.
type oldServer struct {
	socket string
	status int
	ct     string
}

func (e *oldServer) Error() string {
	return fmt.Sprintf("remote: %s answered %d with %q, not the read service's frames", e.socket, e.status, e.ct)
}

// Close releases the client's connections; the serving store stays open.
// Calls after Close return eventlog.ErrClosed.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return eventlog.ErrClosed
	}
	c.http.CloseIdleConnections()
	return nil
}

// events returns a frame callback that passes event frames to fn.
func events(fn func(eventlog.Event) error) func(frame) error {
	return func(fr frame) error {
		if fr.kind != frameEvent {
			return unexpected(fr)
		}
		return fn(fr.event)
	}
}

func unexpected(fr frame) error {
	return fmt.Errorf("remote: unexpected frame of kind %d", fr.kind)
}

// get sends a request for path with query q and passes each frame of the
// response before its end frame to fn. An error frame is returned as the
// error; fn's error stops the read and is returned as is. The header and
// first frame must come within frameTimeout plus wait, the time the
// service may wait for an event, and each next frame within frameTimeout
// of the last, or the read fails with ErrStalled.
func (c *Client) get(ctx context.Context, path string, q url.Values, wait time.Duration, fn func(frame) error) error {
	if c.closed.Load() {
		return eventlog.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timeout := frameTimeout + wait
	deadline := time.AfterFunc(timeout, func() { cancel(errStalled) })
	defer deadline.Stop()
	stalled := func() error {
		if !errors.Is(context.Cause(rctx), errStalled) {
			return nil
		}
		return fmt.Errorf("%w: %w: %s sent nothing for %v", ErrDisconnected, ErrStalled, c.socket, timeout)
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, "http://reprise"+path+"?"+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("remote: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if serr := stalled(); serr != nil {
			return serr
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w at %s: %w", ErrNotServing, c.socket, err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != contentType {
		return &oldServer{socket: c.socket, status: resp.StatusCode, ct: ct}
	}
	body := &bodyReader{r: resp.Body}
	frames := newFrameReader(body)
	for {
		fr, err := frames.next()
		if serr := stalled(); serr != nil {
			return serr
		}
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && body.err != nil && !errors.Is(body.err, io.EOF):
			return fmt.Errorf("%w: %w", ErrDisconnected, body.err)
		case err != nil:
			return err
		case fr.kind == frameEnd:
			return nil
		case fr.kind == frameError:
			return fr.err
		case fn == nil:
			return unexpected(fr)
		}
		// The callback's time is the caller's, not the service's.
		if !deadline.Stop() {
			if serr := stalled(); serr != nil {
				return serr
			}
		}
		if err := fn(fr); err != nil {
			return err
		}
		timeout = frameTimeout
		deadline.Reset(timeout)
	}
}

// bodyReader keeps the error of a response body's reads, to tell a broken
// connection from a malformed frame.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil {
		b.err = err
	}
	return n, err
}
