package bench

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/reprise-dev/reprise"
	"github.com/reprise-dev/reprise/eventlog/pgstore"
)

// pgRate is target 8's bound on the PostgreSQL rates, in appends a second.
const pgRate = 10_000

// pgAppendBench is target 8's single append: one Engine.Append on a
// PostgreSQL store against P1, a bare one-row INSERT + COMMIT into a
// scratch table in the same schema, on the same server.
var pgAppendBench = Bench{
	Name:     "pg-append",
	Postgres: true,
	Rows: []Row{{Target: 8, Name: "pg-append", Figure: "durable message append on PostgreSQL (Engine.Append)",
		Floor: "P1: bare INSERT of 1 row + COMMIT, same schema", Unit: PerOp, What: "append", Limit: 1.5}},
	Reps: 400, QuickReps: 60,
	Open: openPGAppend,
}

// pgConcurrentBench is target 8's throughput: 64 sessions appending at
// once from 64 goroutines of one process, and from 4 processes of 16
// goroutines each. Their bound is a rate, which depends on the server and
// its disk more than any ratio does, so it is informational; the ratio is
// to P1 used serially.
var pgConcurrentBench = Bench{
	Name:     "pg-concurrent",
	Postgres: true,
	Rows: []Row{
		{Target: 8, Name: "pg-concurrent", Figure: "64 sessions appending at once on PostgreSQL, 64 goroutines",
			Floor: "P1 used serially", Unit: Rate, What: "append", AtLeast: pgRate, Informational: true},
		{Target: 8, Name: "pg-processes", Figure: "64 sessions appending at once on PostgreSQL, 4 processes x 16 goroutines",
			Floor: "P1 used serially", Unit: Rate, What: "append", AtLeast: pgRate, Informational: true},
	},
	Reps: 10, QuickReps: 3,
	Open: openPGConcurrent,
}

const (
	pgProcesses       = 4
	pgProcessWriters  = writers / pgProcesses
	pgAppendsPerBurst = 20 // each writer's appends in one burst
	pgFloorInserts    = 100
)

// pgDurable is what the PostgreSQL benches share: a schema of their own,
// an Engine on a store in it, sessions with two messages each, and a pool
// for the floor's inserts into a scratch table beside the store's.
type pgDurable struct {
	dir    string
	schema *pgSchema
	e      *reprise.Engine
	floor  *pgxpool.Pool
	value  []byte // the floor's payload, as long as a stored message
	ids    []string
	nextID int64 // the last scratch row inserted
	n      int   // operations so far, to rotate which side goes first
}

func openPGDurable(ctx context.Context, env *Env, name string, sessions int) (_ *pgDurable, err error) {
	dir, err := mkdir(env, name)
	if err != nil {
		return nil, err
	}
	d := &pgDurable{dir: dir}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	if d.schema, err = createSchema(ctx, env.Postgres); err != nil {
		return nil, err
	}
	store, err := pgstore.Open(ctx, d.schema.url, pgstore.Options{})
	if err != nil {
		return nil, err
	}
	d.e = reprise.New(store, reprise.Options{Logger: quiet, TranscriptDir: filepath.Join(dir, "transcripts")})
	if d.ids, err = createSessions(ctx, d.e, dir, sessions); err != nil {
		return nil, err
	}
	last, err := lastEvent(ctx, store, d.ids[0])
	if err != nil {
		return nil, err
	}
	d.value = make([]byte, len(last.Payload))
	if d.floor, err = pgxpool.New(ctx, d.schema.url); err != nil {
		return nil, fmt.Errorf("floor pool: %w", err)
	}
	if _, err := d.floor.Exec(ctx, "CREATE TABLE reprise_bench_floor (id bigint PRIMARY KEY, payload bytea NOT NULL)"); err != nil {
		return nil, fmt.Errorf("floor table: %w", err)
	}
	return d, nil
}

// createSessions creates n sessions in e with two messages each, so that
// the next message, like every later one, has a parent.
func createSessions(ctx context.Context, e *reprise.Engine, cwd string, n int) ([]string, error) {
	ids := make([]string, 0, n)
	for range n {
		id, err := e.CreateSession(ctx, "", cwd)
		if err != nil {
			return nil, err
		}
		for i := range 2 {
			if _, err := e.Append(ctx, id, message(i)); err != nil {
				return nil, err
			}
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// insert is P1: one row of the floor's payload inserted and committed in
// a transaction of its own. It returns how long it took.
func (d *pgDurable) insert(ctx context.Context) (time.Duration, error) {
	d.nextID++
	return timed(func() error {
		tx, err := d.floor.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, "INSERT INTO reprise_bench_floor (id, payload) VALUES ($1, $2)", d.nextID, d.value); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
}

func (d *pgDurable) Note(string) string {
	return fmt.Sprintf("payloads of %d bytes", len(d.value))
}

func (d *pgDurable) Close() error {
	var err error
	if d.e != nil {
		err = d.e.Close()
	}
	if d.floor != nil {
		d.floor.Close()
	}
	if d.schema != nil {
		if derr := d.schema.drop(); err == nil {
			err = derr
		}
	}
	if rerr := os.RemoveAll(d.dir); err == nil {
		err = rerr
	}
	return err
}

func openPGAppend(ctx context.Context, env *Env) (Runner, error) {
	d, err := openPGDurable(ctx, env, "pg-append", 1)
	if err != nil {
		return nil, err
	}
	return &pgAppendRunner{d}, nil
}

type pgAppendRunner struct{ *pgDurable }

func (r *pgAppendRunner) Run(ctx context.Context) ([]Sample, error) {
	var s Sample
	floor := func() (err error) {
		s.Floor.Time, err = r.insert(ctx)
		return err
	}
	rep := func() (err error) {
		s.Reprise.Time, err = timed(func() error {
			_, err := r.e.Append(ctx, r.ids[0], message(r.n))
			return err
		})
		return err
	}
	if err := alternate(&r.n, floor, rep); err != nil {
		return nil, err
	}
	s.Floor.Work, s.Reprise.Work = 1, 1
	return []Sample{s}, nil
}

func openPGConcurrent(ctx context.Context, env *Env) (_ Runner, err error) {
	d, err := openPGDurable(ctx, env, "pg-concurrent", writers)
	if err != nil {
		return nil, err
	}
	r := &pgConcurrentRunner{pgDurable: d}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("the writer processes: %w", err)
	}
	for range pgProcesses {
		w, err := startWriter(ctx, self, d.schema.url, d.dir)
		if err != nil {
			return nil, err
		}
		r.procs = append(r.procs, w)
	}
	return r, nil
}

type pgConcurrentRunner struct {
	*pgDurable
	procs []*writerProcess
}

func (r *pgConcurrentRunner) Close() error {
	var err error
	for _, w := range r.procs {
		err = cmp.Or(err, w.stop())
	}
	return cmp.Or(r.pgDurable.Close(), err)
}

func (r *pgConcurrentRunner) Run(ctx context.Context) ([]Sample, error) {
	var s, procs Sample
	floor := func() error {
		for range pgFloorInserts {
			d, err := r.insert(ctx)
			if err != nil {
				return err
			}
			s.Floor.Time += d
		}
		s.Floor.Work = pgFloorInserts
		return nil
	}
	rep := func() error {
		d, err := appendBurst(ctx, r.e, r.ids)
		s.Reprise.Time, s.Reprise.Work = d, float64(len(r.ids)*pgAppendsPerBurst)
		return err
	}
	multi := func() error {
		d, err := r.processBurst()
		procs.Reprise.Time, procs.Reprise.Work = d, pgProcesses*pgProcessWriters*pgAppendsPerBurst
		return err
	}
	if err := alternate(&r.n, floor, rep, multi); err != nil {
		return nil, err
	}
	procs.Floor = s.Floor
	return []Sample{s, procs}, nil
}

// appendBurst has a goroutine for each session of ids make
// pgAppendsPerBurst durable appends to it, all starting together, and
// returns how long until all were durable.
func appendBurst(ctx context.Context, e *reprise.Engine, ids []string) (time.Duration, error) {
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make([]error, len(ids))
	)
	for w, id := range ids {
		wg.Go(func() {
			<-start
			for i := range pgAppendsPerBurst {
				if _, err := e.Append(ctx, id, message(i)); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	return time.Since(began), errors.Join(errs...)
}

// processBurst tells every writer process to go and returns the time from
// the first one's start to the last one's end, as they report them.
func (r *pgConcurrentRunner) processBurst() (time.Duration, error) {
	for _, w := range r.procs {
		if _, err := io.WriteString(w.stdin, "go\n"); err != nil {
			return 0, w.failed(fmt.Errorf("tell it to go: %w", err))
		}
	}
	var first, last time.Time
	for _, w := range r.procs {
		start, end, err := w.done()
		if err != nil {
			return 0, err
		}
		if first.IsZero() || start.Before(first) {
			first = start
		}
		if end.After(last) {
			last = end
		}
	}
	return last.Sub(first), nil
}

// writerEnv, set to the URL of a PostgreSQL store, makes the process one
// of the pg-concurrent bench's writers: see MaybeServeWriter.
const writerEnv = "REPRISE_BENCH_PG_WRITER"

// MaybeServeWriter runs a writer of the pg-concurrent bench when the
// process was started as one, and then exits, never returning; otherwise
// it returns at once. Programs that run the benches call it first thing
// in main, since the bench starts its writer processes by running its own
// executable again.
//
// A writer opens an Engine on the store, creates its sessions and says
// "ready". Each line "go" it reads then has a goroutine for each session
// make pgAppendsPerBurst durable appends to it, and is answered "done
// START END", the Unix times in nanoseconds at which the burst began and
// the last append was durable. It exits when its input ends.
func MaybeServeWriter() {
	u := os.Getenv(writerEnv)
	if u == "" {
		return
	}
	if err := serveWriter(context.Background(), u, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench writer:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func serveWriter(ctx context.Context, storeURL string, in io.Reader, out io.Writer) (err error) {
	dir, err := os.MkdirTemp(".", "writer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := pgstore.Open(ctx, storeURL, pgstore.Options{})
	if err != nil {
		return err
	}
	e := reprise.New(store, reprise.Options{Logger: quiet, TranscriptDir: filepath.Join(dir, "transcripts")})
	defer func() { err = cmp.Or(err, e.Close()) }()
	ids, err := createSessions(ctx, e, dir, pgProcessWriters)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "ready")
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		if lines.Text() != "go" {
			return fmt.Errorf("told %q, want go", lines.Text())
		}
		start := time.Now()
		d, err := appendBurst(ctx, e, ids)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "done %d %d\n", start.UnixNano(), start.Add(d).UnixNano())
	}
	return lines.Err()
}

// writerProcess is a running writer of the pg-concurrent bench.
type writerProcess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr strings.Builder
}

// startWriter starts self as a writer on the store at storeURL, in dir,
// and waits until it is ready.
func startWriter(ctx context.Context, self, storeURL, dir string) (*writerProcess, error) {
	w := &writerProcess{cmd: exec.CommandContext(ctx, self)}
	w.cmd.Dir = dir
	w.cmd.Env = append(os.Environ(), writerEnv+"="+storeURL)
	w.cmd.Stderr = &w.stderr
	var err error
	if w.stdin, err = w.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w.lines = bufio.NewScanner(stdout)
	if err := w.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start a writer process: %w", err)
	}
	line, err := w.line()
	if err == nil && line != "ready" {
		err = fmt.Errorf("said %q, want ready", line)
	}
	if err != nil {
		w.stdin.Close()
		_ = w.cmd.Wait()
		return nil, w.failed(err)
	}
	return w, nil
}

// line returns the next line the writer wrote.
func (w *writerProcess) line() (string, error) {
	if w.lines.Scan() {
		return w.lines.Text(), nil
	}
	return "", cmp.Or(w.lines.Err(), io.ErrUnexpectedEOF)
}

// done reads the writer's answer to a go: when its burst began and ended.
func (w *writerProcess) done() (start, end time.Time, err error) {
	line, err := w.line()
	if err != nil {
		return start, end, w.failed(err)
	}
	fields := strings.Fields(line)
	if len(fields) != 3 || fields[0] != "done" {
		return start, end, w.failed(fmt.Errorf("said %q, want done START END", line))
	}
	var ns [2]int64
	for i, f := range fields[1:] {
		if ns[i], err = strconv.ParseInt(f, 10, 64); err != nil {
			return start, end, w.failed(fmt.Errorf("said %q: %w", line, err))
		}
	}
	return time.Unix(0, ns[0]), time.Unix(0, ns[1]), nil
}

// failed wraps err with what the writer wrote on its standard error.
func (w *writerProcess) failed(err error) error {
	if msg := strings.TrimSpace(w.stderr.String()); msg != "" {
		return fmt.Errorf("writer process: %w; it wrote: %s", err, msg)
	}
	return fmt.Errorf("writer process: %w", err)
}

// stop ends the writer's input and waits for it to exit.
func (w *writerProcess) stop() error {
	w.stdin.Close()
	if err := w.cmd.Wait(); err != nil {
		return w.failed(err)
	}
	return nil
}

// pgSchema is a schema of a bench's own on a PostgreSQL server, dropped
// with everything in it when the bench ends.
type pgSchema struct {
	name  string
	url   string // the server's URL with the schema as search_path
	admin *pgxpool.Pool
}

// createSchema creates a schema with a random name on the server at base,
// a postgres:// URL or a key=value connection string.
func createSchema(ctx context.Context, base string) (*pgSchema, error) {
	admin, err := pgxpool.New(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	s := &pgSchema{name: "reprise_bench_" + hex.EncodeToString(suffix), admin: admin}
	if s.url, err = withSearchPath(base, s.name); err != nil {
		admin.Close()
		return nil, err
	}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+s.name); err != nil {
		admin.Close()
		return nil, fmt.Errorf("postgres: create schema: %w", err)
	}
	return s, nil
}

// drop drops the schema and everything in it.
func (s *pgSchema) drop() error {
	defer s.admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.admin.Exec(ctx, "DROP SCHEMA "+s.name+" CASCADE"); err != nil {
		return fmt.Errorf("postgres: drop schema %s: %w", s.name, err)
	}
	return nil
}

// withSearchPath returns base with search_path set to schema.
func withSearchPath(base, schema string) (string, error) {
	if !pgstore.IsURL(base) {
		return base + " search_path=" + schema, nil
	}
	u, err := url.Parse(base)
	if err != nil {
		// The error would repeat the URL, password and all.
		return "", errors.New("postgres: the URL does not parse")
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
