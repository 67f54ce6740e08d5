package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/reprise-dev/reprise/eventlog"
)

// Dir is the directory that keeps the index of the bbolt store at
// storePath: beside it, its name and ".search".
func Dir(storePath string) string { return storePath + ".search" }

// Open opens the index of store kept in the directory dir (Dir of the
// store's file), creating it when there is none. An index there that is
// not of store's log as it is now (made by another build's layout, or of
// another file, or of this one before it was replaced by an older copy)
// is removed and made again, empty: Update then builds it from the
// whole log. Another process holding dir makes Open fail with ErrLocked.
func Open(ctx context.Context, dir string, store eventlog.Store) (*Index, error) {
	b, err := openBleve(dir)
	if err != nil {
		return nil, err
	}
	x, err := open(ctx, store, b)
	if err != nil {
		_ = b.close()
		return nil, err
	}
	return x, nil
}

// The internal keys of a bleve index, beside its documents.
var (
	keyLayout    = []byte("reprise/layout")
	keyLast      = []byte("reprise/last")
	keyDeleted   = []byte("reprise/deleted")
	keyCompacted = []byte("reprise/compacted") // when compact last ran, a write that waits for the merge to be persisted
)

// Fields of the documents of a bleve index.
const (
	fieldText    = "text"    // the words, analysed by textAnalyzer
	fieldSession = "session" // the session, as it is
	fieldSID     = "sid"     // a session document's id, for prefixes
)

// textAnalyzer cuts text into words (Unicode's word boundaries) and
// lower-cases them. It keeps every word: "not" and "the" are found too.
const textAnalyzer = "reprise_words"

// bleveBackend keeps documents in a bleve index (scorch) in a directory.
type bleveBackend struct {
	dir string
	idx bleve.Index
}

// openBleve opens the bleve index in dir, or creates it.
func openBleve(dir string) (*bleveBackend, error) {
	b := &bleveBackend{dir: dir}
	idx, err := bleve.OpenUsing(dir, bleveConfig())
	switch {
	case errors.Is(err, bleve.ErrorIndexPathDoesNotExist):
		return b, b.create()
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
	case err != nil:
		if err := b.remove(fmt.Sprintf("it does not open: %v", err)); err != nil {
			return nil, err
		}
		return b, b.create()
	}
	b.idx = idx
	return b, nil
}

// bleveConfig is how the index runs: a second process waits a second for
// the directory, then gives up.
func bleveConfig() map[string]any {
	return map[string]any{"bolt_timeout": "1s"}
}

// newMapping returns the index's mapping: three fields, none stored. The
// text of a hit is read back from the log.
func newMapping() (mapping.IndexMapping, error) {
	m := bleve.NewIndexMapping()
	err := m.AddCustomAnalyzer(textAnalyzer, map[string]any{
		"type":          custom.Name,
		"tokenizer":     unicode.Name,
		"token_filters": []string{lowercase.Name},
	})
	if err != nil {
		return nil, err
	}
	field := func(analyzer string) *mapping.FieldMapping {
		f := bleve.NewTextFieldMapping()
		f.Analyzer, f.Store, f.IncludeTermVectors, f.IncludeInAll, f.DocValues = analyzer, false, false, false, false
		return f
	}
	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt(fieldText, field(textAnalyzer))
	doc.AddFieldMappingsAt(fieldSession, field(keyword.Name))
	doc.AddFieldMappingsAt(fieldSID, field(keyword.Name))
	m.DefaultMapping = doc
	m.DefaultAnalyzer = textAnalyzer
	m.StoreDynamic, m.IndexDynamic, m.DocValuesDynamic = false, false, false
	return m, nil
}

// create makes an empty index in b.dir.
func (b *bleveBackend) create() error {
	m, err := newMapping()
	if err != nil {
		return fmt.Errorf("search: the index's mapping: %w", err)
	}
	idx, err := bleve.NewUsing(b.dir, m, scorch.Name, scorch.Name, bleveConfig())
	if errors.Is(err, bolterrors.ErrTimeout) {
		return fmt.Errorf("%w: %s", ErrLocked, b.dir)
	}
	if err != nil {
		return fmt.Errorf("search: create the index in %s: %w", b.dir, err)
	}
	b.idx = idx
	return nil
}

// remove removes b.dir, which must be a bleve index or empty: a path
// given by mistake is never emptied.
func (b *bleveBackend) remove(why string) error {
	entries, err := os.ReadDir(b.dir)
	if err != nil {
		return fmt.Errorf("search: %s: %w", b.dir, err)
	}
	if _, err := os.Stat(filepath.Join(b.dir, "index_meta.json")); len(entries) > 0 && err != nil {
		return fmt.Errorf("%w: %s holds files and no index_meta.json (%s): remove it or name another directory", ErrNotIndex, b.dir, why)
	}
	if err := os.RemoveAll(b.dir); err != nil {
		return fmt.Errorf("search: remove the index %s (%s): %w", b.dir, why, err)
	}
	return nil
}

func (b *bleveBackend) load(ctx context.Context) (state, error) {
	var st state
	for _, f := range []struct {
		key []byte
		to  any
	}{{keyLast, &st.Last}, {keyDeleted, &st.Deleted}} {
		v, err := b.idx.GetInternal(f.key)
		if err != nil {
			return state{}, fmt.Errorf("search: read the index's state: %w", err)
		}
		if v != nil {
			if err := json.Unmarshal(v, f.to); err != nil {
				return state{}, fmt.Errorf("%w: %s: its %s: %v", ErrNotIndex, b.dir, f.key, err)
			}
		}
	}
	v, err := b.idx.GetInternal(keyLayout)
	if err != nil {
		return state{}, fmt.Errorf("search: read the index's state: %w", err)
	}
	st.Layout = string(v)
	return st, nil
}

func (b *bleveBackend) reset(ctx context.Context) error {
	if err := b.idx.Close(); err != nil {
		return fmt.Errorf("search: close the index %s: %w", b.dir, err)
	}
	b.idx = nil
	if err := b.remove("it is rebuilt"); err != nil {
		return err
	}
	return b.create()
}

func (b *bleveBackend) apply(ctx context.Context, c change) error {
	batch := b.idx.NewBatch()
	for _, id := range c.Delete {
		ids, err := b.sessionDocs(ctx, id)
		if err != nil {
			return err
		}
		for _, doc := range ids {
			batch.Delete(doc)
		}
	}
	for _, d := range c.Docs {
		fields := map[string]string{fieldText: d.Text, fieldSession: d.Session}
		if d.Kind == KindSession {
			fields[fieldSID] = d.Session
		}
		if err := batch.Index(docID(d.Position, d.Part), fields); err != nil {
			return fmt.Errorf("search: index %s#%d: %w", d.Stream, d.Seq, err)
		}
	}
	if c.Deleted != nil {
		v, err := json.Marshal(c.Deleted)
		if err != nil {
			return err
		}
		batch.SetInternal(keyDeleted, v)
	}
	last, err := json.Marshal(c.Last)
	if err != nil {
		return err
	}
	batch.SetInternal(keyLast, last)
	batch.SetInternal(keyLayout, []byte(layout))
	if err := b.idx.Batch(batch); err != nil {
		return fmt.Errorf("search: write to the index %s: %w", b.dir, err)
	}
	return nil
}

// sessionDocs returns the ids of every document of session.
func (b *bleveBackend) sessionDocs(ctx context.Context, session string) ([]string, error) {
	const page = 10000
	q := bleve.NewTermQuery(session)
	q.SetField(fieldSession)
	var ids []string
	for {
		req := bleve.NewSearchRequestOptions(q, page, len(ids), false)
		req.SortBy([]string{"_id"})
		res, err := b.idx.SearchInContext(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("search: find the documents of session %s: %w", session, err)
		}
		for _, h := range res.Hits {
			ids = append(ids, h.ID)
		}
		if len(res.Hits) < page {
			return ids, nil
		}
	}
}

// compact merges the index's segments into one: a merge writes the
// documents that are still there, and the files of the segments it
// replaced are removed.
// compactDoc is the id of the document compact indexes; it holds no
// field, so no query finds it.
const compactDoc = "compact"

func (b *bleveBackend) compact(ctx context.Context) error {
	// Scorch merges two segments or more, never one alone: an index in
	// one segment would keep the words of its removed documents. A
	// document of no field, indexed again at each compaction, makes a
	// second segment for the merge to fold the first into.
	if err := b.idx.Index(compactDoc, map[string]string{}); err != nil {
		return fmt.Errorf("search: compact the index %s: %w", b.dir, err)
	}
	adv, err := b.idx.Advanced()
	if err != nil {
		return fmt.Errorf("search: compact the index %s: %w", b.dir, err)
	}
	s, ok := adv.(*scorch.Scorch)
	if !ok {
		return fmt.Errorf("search: compact the index %s: it is a %T, not scorch", b.dir, adv)
	}
	if err := s.ForceMerge(ctx, &mergeplan.SingleSegmentMergePlanOptions); err != nil {
		return fmt.Errorf("search: compact the index %s: %w", b.dir, err)
	}
	// The merge is in memory until the index's next write is persisted,
	// which waits for what came before it: a Close before then would
	// keep the files as they were.
	if err := b.idx.SetInternal(keyCompacted, []byte(strconv.FormatInt(time.Now().UnixNano(), 10))); err != nil {
		return fmt.Errorf("search: compact the index %s: %w", b.dir, err)
	}
	return nil
}

func (b *bleveBackend) query(ctx context.Context, q string, limit, offset int) ([]ref, int, error) {
	match := bleve.NewMatchQuery(q)
	match.SetField(fieldText)
	match.SetOperator(query.MatchQueryOperatorAnd)
	qs := []query.Query{match}
	if !strings.ContainsAny(q, " \t\r\n") {
		prefix := bleve.NewPrefixQuery(q)
		prefix.SetField(fieldSID)
		qs = append(qs, prefix)
	}
	req := bleve.NewSearchRequestOptions(bleve.NewDisjunctionQuery(qs...), limit, offset, false)
	req.SortBy([]string{"-_id"})
	res, err := b.idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, 0, fmt.Errorf("search: query the index %s: %w", b.dir, err)
	}
	refs := make([]ref, 0, len(res.Hits))
	for _, h := range res.Hits {
		r, err := parseDocID(h.ID)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %s: %v", ErrNotIndex, b.dir, err)
		}
		refs = append(refs, r)
	}
	return refs, int(res.Total), nil
}

func (b *bleveBackend) close() error {
	if b.idx == nil {
		return nil
	}
	err := b.idx.Close()
	b.idx = nil
	return err
}

// docID is the id of a document: its event's position, 20 digits so
// that ids sort as positions do, and its part.
func docID(position uint64, part int) string {
	return fmt.Sprintf("%020d.%d", position, part)
}

func parseDocID(id string) (ref, error) {
	pos, part, ok := strings.Cut(id, ".")
	p, err1 := strconv.ParseUint(pos, 10, 64)
	n, err2 := strconv.Atoi(part)
	if !ok || err1 != nil || err2 != nil {
		return ref{}, fmt.Errorf("document id %q is not position.part", id)
	}
	return ref{Position: p, Part: n}, nil
}
