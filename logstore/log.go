package logstore

import (
	"context"
	"errors"
)

// Log is what flightd needs of a durable log: one append-only log per table
// bucket, with row offsets, high watermarks that advance in offset order and
// cut consistently across buckets, reads of durable entries, and truncation.
// Store keeps it in an embedded Badger database; package kafkalog keeps it in
// Apache Kafka. The semantics are Store's (see the package doc and each
// method there); a Log that keeps its entries elsewhere adds the failures of
// reaching it, as ErrUnavailable.
//
// One conformance suite (logstore/logtest) runs against every
// implementation.
type Log interface {
	// Append writes entries atomically (all durable and visible, or none)
	// and returns each entry's base offset.
	Append(ctx context.Context, entries []Entry) ([]int64, error)
	// AppendAsync is Append in two steps: queue now (offsets are assigned
	// in queue order), wait later (exactly once). The log may keep the
	// payloads until wait returns: the caller must not change them before.
	AppendAsync(ctx context.Context, entries []Entry) (wait func() ([]int64, error), err error)
	// Read calls fn for each durable entry of the bucket overlapping
	// [from, to), in offset order; ErrTruncated when from is below the log
	// start.
	Read(ctx context.Context, b Bucket, from, to int64, fn func(base int64, rows int64, payload []byte) error) error
	// HighWatermark is the bucket's exclusive durable end (0 if unknown).
	HighWatermark(b Bucket) int64
	// HighWatermarks returns every bucket of the table with a log above 0,
	// as one consistent cut.
	HighWatermarks(table string) map[int32]int64
	// Buckets lists, ascending, the table's buckets with a log above 0.
	Buckets(table string) []int32
	// Start is the bucket's log start: offsets below it were truncated.
	Start(b Bucket) int64
	// Advanced is closed the next time high watermarks advance, a table
	// is dropped or the log closes.
	Advanced() <-chan struct{}
	// Sync waits until HighWatermarks holds every entry of the table that
	// any writer committed before the call: on a log that several nodes
	// write, what another node acknowledged. A log with one writer, whose
	// appends return once readable, returns at once.
	Sync(ctx context.Context, table string) error
	// Truncate deletes the bucket's entries that end at or below below.
	Truncate(ctx context.Context, b Bucket, below int64) error
	// DropTable deletes every bucket of the table.
	DropTable(ctx context.Context, table string) error
	// CollectGarbage returns the space of deleted entries to the system,
	// where the log keeps that to itself.
	CollectGarbage() error
	// Ready returns nil once the log knows every bucket's high watermark;
	// ErrUnavailable while a log that could not reach its servers at start
	// still recovers (until then HighWatermarks reads empty, which readers
	// of un-tiered rows must not take for an empty log), ErrFenced once
	// another writer took it over (its high watermarks stopped following).
	Ready() error
	// Describe names the log for messages and the warehouse's record of
	// which log holds its un-tiered rows, e.g. "badger:./data/log".
	Describe() Description
	// Close waits for queued appends and running calls and releases the
	// log.
	Close() error
}

// Description says which log a warehouse's un-tiered rows live in.
type Description struct {
	Kind     string // "badger" or "kafka"
	Location string // the directory, or the brokers and topic prefix
	// ID names where a table's un-tiered rows are, as the table's
	// lakestream.log option records it: "badger", or "kafka:<topic
	// prefix>" (the brokers may change; the topics are the log).
	ID string
}

// String renders the description for messages: kind:location.
func (d Description) String() string { return d.Kind + ":" + d.Location }

// ErrUnavailable: the log's servers cannot be reached (or did not answer in
// time). Nothing of a failed Append was acknowledged; a later call may
// succeed once they are back. Match with errors.Is.
var ErrUnavailable = errors.New("logstore: log unavailable")

// ErrFenced: another writer took the log over (a second server started on
// the same Kafka topics); this one no longer writes to it. Match with
// errors.Is.
var ErrFenced = errors.New("logstore: another writer took over the log")

var _ Log = (*Store)(nil)

// Sync returns at once: a Store has one writer, this process.
func (s *Store) Sync(context.Context, string) error { return nil }

// Ready returns nil: a Store recovers in Open.
func (s *Store) Ready() error { return nil }

// Describe names the Badger log by its directory.
func (s *Store) Describe() Description {
	return Description{Kind: "badger", Location: s.dir, ID: "badger"}
}
