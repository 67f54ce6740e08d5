package remote

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/reprise-dev/reprise/eventlog"
)

// Frame kinds, the first element of every frame.
const (
	frameEnd    = 0
	frameEvent  = 1
	frameStream = 2
	frameHead   = 3
	frameError  = 4
	frameRow    = 5
)

// Error codes of error frames.
const (
	codeInvalidStream = "invalid_stream"
	codeBadRequest    = "bad_request"
	codeClosed        = "closed"
	codeCorrupt       = "corrupt"
	codeNoIndex       = "no_index"
	codeInternal      = "internal"
	// codeStopped: the serving process stopped answering, its work
	// cancelled as it shut down; the client sees ErrDisconnected.
	codeStopped = "stopped"
)

// frameWriter writes frames to a response body.
type frameWriter struct{ enc *msgpack.Encoder }

func newFrameWriter(w io.Writer) *frameWriter { return &frameWriter{msgpack.NewEncoder(w)} }

func (f *frameWriter) event(ev eventlog.Event) error {
	e := f.enc
	return errors.Join(e.EncodeArrayLen(9), e.EncodeUint(frameEvent), e.EncodeString(ev.Stream),
		e.EncodeUint(ev.Seq), e.EncodeUint(ev.Position), e.EncodeString(string(ev.Type)),
		e.EncodeUint(uint64(ev.Version)), e.EncodeInt(ev.Time), e.EncodeString(ev.RestoreID), e.EncodeBytes(ev.Payload))
}

func (f *frameWriter) stream(info eventlog.StreamInfo) error {
	e := f.enc
	return errors.Join(e.EncodeArrayLen(3), e.EncodeUint(frameStream), e.EncodeString(info.Name), e.EncodeUint(info.Head))
}

func (f *frameWriter) head(head uint64) error {
	e := f.enc
	return errors.Join(e.EncodeArrayLen(2), e.EncodeUint(frameHead), e.EncodeUint(head))
}

func (f *frameWriter) row(key string, value []byte) error {
	e := f.enc
	return errors.Join(e.EncodeArrayLen(3), e.EncodeUint(frameRow), e.EncodeString(key), e.EncodeBytes(value))
}

func (f *frameWriter) end() error {
	return errors.Join(f.enc.EncodeArrayLen(1), f.enc.EncodeUint(frameEnd))
}

func (f *frameWriter) error(code, msg string) error {
	e := f.enc
	return errors.Join(e.EncodeArrayLen(3), e.EncodeUint(frameError), e.EncodeString(code), e.EncodeString(msg))
}

// errorCode returns the error frame's code for err.
func errorCode(err error) string {
	switch {
	case errors.Is(err, eventlog.ErrInvalidStream):
		return codeInvalidStream
	case errors.Is(err, eventlog.ErrClosed):
		return codeClosed
	case errors.Is(err, eventlog.ErrCorrupt):
		return codeCorrupt
	case errors.Is(err, eventlog.ErrNoIndex):
		return codeNoIndex
	case errors.Is(err, context.Canceled):
		return codeStopped
	}
	return codeInternal
}

// remoteError is an error the serving process reported. It matches the
// eventlog sentinel its code names.
type remoteError struct {
	code, msg string
}

func (e *remoteError) Error() string { return e.msg }

// Is maps the code back to eventlog's sentinels.
func (e *remoteError) Is(target error) bool {
	switch e.code {
	case codeInvalidStream:
		return target == eventlog.ErrInvalidStream
	case codeClosed:
		return target == eventlog.ErrClosed
	case codeCorrupt:
		return target == eventlog.ErrCorrupt
	case codeNoIndex:
		return target == eventlog.ErrNoIndex
	case codeStopped:
		return target == ErrDisconnected
	}
	return false
}

// frame is one decoded frame.
type frame struct {
	kind   uint64
	event  eventlog.Event
	stream eventlog.StreamInfo
	head   uint64
	key    string // of a row
	value  []byte // of a row
	err    error
}

// frameReader reads frames from a response body.
type frameReader struct{ dec *msgpack.Decoder }

func newFrameReader(r io.Reader) *frameReader { return &frameReader{dec: msgpack.NewDecoder(r)} }

// frameFields is the number of fields of each kind of frame.
var frameFields = [...]int{frameEnd: 1, frameEvent: 9, frameStream: 3, frameHead: 2, frameError: 3, frameRow: 3}

// next reads one frame. A body that ends, cleanly or not, before the end
// frame is ErrDisconnected.
func (f *frameReader) next() (frame, error) {
	d := f.dec
	n, err := d.DecodeArrayLen()
	if err != nil {
		return frame{}, cut(err)
	}
	var fr frame
	if fr.kind, err = d.DecodeUint64(); err != nil {
		return fr, cut(err)
	}
	if fr.kind >= uint64(len(frameFields)) || n != frameFields[fr.kind] {
		return fr, fmt.Errorf("remote: malformed frame of kind %d with %d fields", fr.kind, n)
	}
	switch fr.kind {
	case frameEvent:
		err = f.event(&fr.event)
	case frameStream:
		fr.stream.Name, err = d.DecodeString()
		if err == nil {
			fr.stream.Head, err = d.DecodeUint64()
		}
	case frameHead:
		fr.head, err = d.DecodeUint64()
	case frameRow:
		if fr.key, err = d.DecodeString(); err == nil {
			fr.value, err = d.DecodeBytes()
		}
	case frameError:
		var code, msg string
		if code, err = d.DecodeString(); err == nil {
			msg, err = d.DecodeString()
		}
		fr.err = &remoteError{code: code, msg: msg}
	}
	return fr, cut(err)
}

// event decodes the fields of an event frame into ev.
func (f *frameReader) event(ev *eventlog.Event) error {
	d := f.dec
	var (
		typ     string
		version uint16
		err     error
	)
	if ev.Stream, err = d.DecodeString(); err != nil {
		return err
	}
	if ev.Seq, err = d.DecodeUint64(); err != nil {
		return err
	}
	if ev.Position, err = d.DecodeUint64(); err != nil {
		return err
	}
	if typ, err = d.DecodeString(); err != nil {
		return err
	}
	ev.Type = eventlog.Type(typ)
	if version, err = d.DecodeUint16(); err != nil {
		return err
	}
	ev.Version = version
	if ev.Time, err = d.DecodeInt64(); err != nil {
		return err
	}
	if ev.RestoreID, err = d.DecodeString(); err != nil {
		return err
	}
	ev.Payload, err = d.DecodeBytes()
	return err
}

// cut turns the end of a body mid-frame into ErrDisconnected.
func cut(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: the response ended early", ErrDisconnected)
	}
	return err
}
