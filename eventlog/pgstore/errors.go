package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

var (
	// ErrConnection is matched by errors from a call that could not reach
	// the database or lost its connection to it: the server is down or
	// restarting, the network failed, or an administrator ended the
	// session. The call's transaction, if it had begun, was rolled back by
	// the server, except in the one case the error says so: a commit whose
	// outcome is unknown. The store drops its other connections too, so the
	// next call connects afresh.
	ErrConnection = errors.New("pgstore: connection to the database failed")

	// ErrFormat is returned by Open for a schema that is not a reprise store
	// this build reads: one whose schema version is newer than SchemaVersion,
	// or, read-only, one never created or not yet upgraded.
	ErrFormat = errors.New("pgstore: not a reprise store in a supported schema version")
)

// SQLSTATE codes the store reacts to.
const (
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeUniqueViolation      = "23505"
	codeUndefinedTable       = "42P01"
	codeAdminShutdown        = "57P01"
	codeCrashShutdown        = "57P02"
	codeCannotConnectNow     = "57P03"
)

// sqlState returns the SQLSTATE of a server error, or "".
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// isConnError reports whether err means the connection to the server failed
// or went away, as opposed to the server refusing a statement.
func isConnError(err error) bool {
	if code := sqlState(err); code != "" {
		return strings.HasPrefix(code, "08") || // connection exception
			code == codeAdminShutdown || code == codeCrashShutdown || code == codeCannotConnectNow
	}
	var (
		connectErr *pgconn.ConnectError
		netErr     net.Error
	)
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED)
}

// fail wraps err from the operation op. An error caused by ctx ending
// matches ctx's error; a connection error matches ErrConnection and resets
// the store's pools, since a server restart or a network failure breaks
// every connection at once.
func (s *Store) fail(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(err, ctxErr) {
			return fmt.Errorf("pgstore: %s: %w", op, err)
		}
		return fmt.Errorf("pgstore: %s: %w (%v)", op, ctxErr, err)
	}
	if isConnError(err) {
		s.pool.Reset()
		s.locks.Reset()
		return fmt.Errorf("%w: %s: %w", ErrConnection, op, err)
	}
	return fmt.Errorf("pgstore: %s: %w", op, err)
}
