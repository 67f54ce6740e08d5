// Package search keeps a full-text index of a store's log, so that the
// words of a session are found without reading the log: the text of
// messages (meta messages, which hold the context hooks injected, and
// thinking included), the input of each tool call and its result, what
// hooks said in each step of an agent (their errors, stderr, context,
// reasons, summaries and answers, and the hooks' commands), each session's
// id (found by its prefix too) and its working directory.
//
// Each hit names the event that holds the text: a message by its session
// and sequence (and its uuid, and the tool call's id for a tool block), a
// hook step by its agent stream and sequence and the session it ran on,
// with the event's store-wide position. Its snippet is read back from the
// log, not from the index, which stores no text of its own: only the
// words, and where they came from.
//
// On a bbolt store the index is a bleve index in a directory beside the
// file (Dir); on PostgreSQL it is a table in the store's schema, searched
// with the server's own full-text search (OpenPostgres). Both answer the
// same calls through Index.
//
// # Usage
//
//	x, err := search.Open(ctx, search.Dir(path), engine.Store())
//	...
//	_, err = x.Update(ctx) // after appends, or before each search
//	res, err := x.Search(ctx, "permission denied", 20, 0)
//	for _, h := range res.Hits { ... h.Session, h.Seq, h.Snippet ... }
//
// A host that holds a bbolt store for long serves its readers' searches
// with its own index, beside the store's reads on its socket:
//
//	engine, err := reprise.Open(path, reprise.Options{ServeReads: true, ServeSearch: search.Served(path)})
//
// and a reader in another process asks it through the socket
// (remote.Dial):
//
//	res, err := search.Remote(ctx, client, "permission denied", 20, 0)
//
// Held is such an index: opened at its first search, brought up to date
// before each.
//
// # Caveats
//
// The index belongs to the process that holds the store, which alone
// updates it; a second process opening the same directory gets ErrLocked
// after a second, and a reader of the store through another process asks
// that process (Remote; ErrNotServed when it serves no searches, and
// the reader may then open the index itself). Nothing updates the index
// on its own: it answers as of its last Update, which reads the log from
// the last position it holds, so an index is as fresh as its holder
// keeps it.
//
// A crash loses nothing: the index records, with each change, the last
// event it folded in, and the next Update goes on from there, writing
// again what the crash cut off. An index that is not of the log as it is
// (made under another layout, of another file, or ahead of the log, as
// when the file was replaced by an older copy) is removed and built again
// from the whole log, which takes minutes for millions of messages; a
// directory that holds anything but an index is never removed
// (ErrNotIndex).
//
// Deleting a session removes its documents at the next Update: the
// session's own and those of the hook steps that ran on it, as a vacuum
// blanks them in the log. Until the index is compacted its files may still
// hold the words of removed documents, as a bbolt file holds deleted
// events until a vacuum: the Update that reads a vacuum's record compacts
// the index (all of it, into one segment), and Compact does it at any
// time. A hit whose event a vacuum removed before the next Update is left
// out of the hits, though Total still counts it.
//
// Words are what Unicode calls words, lower-cased, with no stemming and
// no stop words: "main.go" is one word, "/home/me/proj" three. PostgreSQL
// cuts them with its own parser (the 'simple' configuration, slashes read
// as spaces), which differs in the details: a hyphenated word is found
// by its parts and whole, a host name as one word. A search finds the
// documents that hold every word of the query, anywhere in them, newest
// first; there are no phrases and no operators. The prompts of
// PromptHookStarted intents, first prompts, summaries of compactions and
// imported records that are not messages are not indexed.
//
// On a million short messages (the package's BenchmarkSearch), the bleve
// index takes about 80 s to build from the log, on 2 cores, and about 100
// MB beside a 215 MB store; a word in one message of a hundred answers
// its first 20 hits and its total in 5 to 31 ms (31 on a freshly built
// index, whose segments are not merged yet).
package search
