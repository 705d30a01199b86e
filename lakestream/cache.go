package lakestream

import (
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/logstore"
)

// DefaultLogCacheBytes bounds the decoded log entries kept in memory.
const DefaultLogCacheBytes = 256 << 20

// Small entries (single-row writes, small INSERTs) have a budget of their
// own: decoding an entry costs about as much per entry as per row, so a
// table of small writes gains the most from the cache, and a busy table of
// 10k-row batches filling the main budget must not leave its reads to the
// log (point queries of t$rt slowed from 2.5 to 4.6 ms at the median).
const (
	smallEntryBytes = 64 << 10
	smallCacheBytes = 32 << 20
)

// logCache keeps decoded log entries of the un-tiered delta, by bucket and
// base offset, so that t$rt reads and tiering rounds do not read and decode
// the log again. Entries are added when a write is durable (or when a read
// had to decode them) and dropped once the lake holds them. Past its byte
// limit (for small entries: past smallCacheBytes) the cache takes nothing
// more and reads go to the log.
type logCache struct {
	mu      sync.Mutex
	limit   int64
	bytes   int64 // entries of smallEntryBytes or more
	small   int64 // smaller entries
	buckets map[logstore.Bucket]map[int64]*cachedEntry
	floor   map[logstore.Bucket]int64 // the highest offset dropBelow was called with
}

type cachedEntry struct {
	rec    arrow.RecordBatch
	schema int64 // the table schema rec's columns are of
	kinds  []byte
	size   int64
	at     time.Time   // when the entry was written (a run: its first entry)
	parts  []entryPart // a run (see replaceRun): the log entries it joins
}

// entryPart is one log entry of a run: its rows and write time.
type entryPart struct {
	rows int64
	at   time.Time
}

// entries returns the log entries e holds.
func (e *cachedEntry) entries() []entryPart {
	if e.parts != nil {
		return e.parts
	}
	return []entryPart{{rows: e.rec.NumRows(), at: e.at}}
}

func newLogCache(limit int64) *logCache {
	return &logCache{limit: limit, buckets: map[logstore.Bucket]map[int64]*cachedEntry{}, floor: map[logstore.Bucket]int64{}}
}

// put keeps rec (retained), rows of table schema schema, as the entry at
// base of b, written at at.
func (c *logCache) put(b logstore.Bucket, base int64, rec arrow.RecordBatch, schema int64, kinds []byte, at time.Time) {
	size := arrowutil.RecordBytes(rec) + int64(len(kinds))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limit <= 0 || *c.budget(size)+size > c.limitOf(size) || base+rec.NumRows() <= c.floor[b] {
		return // full, or already in the lake
	}
	m := c.buckets[b]
	if m == nil {
		m = map[int64]*cachedEntry{}
		c.buckets[b] = m
	}
	if _, ok := m[base]; ok {
		return
	}
	rec.Retain()
	m[base] = &cachedEntry{rec: rec, schema: schema, kinds: kinds, size: size, at: at}
	*c.budget(size) += size
}

// evolved keeps rec (retained), the rows of the entry at base of b under
// schema, in place of old, if the entry still holds old.
func (c *logCache) evolved(b logstore.Bucket, base int64, old, rec arrow.RecordBatch, schema int64) {
	size := arrowutil.RecordBytes(rec)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.buckets[b][base]
	if e == nil || e.rec != old || rec.NumRows() != old.NumRows() {
		return
	}
	size += int64(len(e.kinds))
	*c.budget(e.size) -= e.size
	old.Release()
	rec.Retain()
	e.rec, e.schema, e.size = rec, schema, size
	*c.budget(size) += size
}

// budget is the byte count an entry of size counts against.
func (c *logCache) budget(size int64) *int64 {
	if size < smallEntryBytes {
		return &c.small
	}
	return &c.bytes
}

func (c *logCache) limitOf(size int64) int64 {
	if size < smallEntryBytes {
		return min(c.limit, smallCacheBytes)
	}
	return c.limit
}

// get returns the entry at base of b, retained for the caller, its schema
// and the log entries it holds.
func (c *logCache) get(b logstore.Bucket, base int64) (arrow.RecordBatch, int64, []byte, []entryPart, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.buckets[b][base]
	if e == nil {
		return nil, 0, nil, nil, false
	}
	e.rec.Retain()
	return e.rec, e.schema, e.kinds, e.entries(), true
}

// writeTime returns when the entry at base of b was written.
func (c *logCache) writeTime(b logstore.Bucket, base int64) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.buckets[b][base]
	if e == nil || e.at.IsZero() {
		return time.Time{}, false
	}
	return e.at, true
}

// has reports whether an entry starts at base.
func (c *logCache) has(b logstore.Bucket, base int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buckets[b][base] != nil
}

// dropBelow releases the entries of b that end at or below off. Every read
// calls it, so a call at or below the last one's offset returns at once.
func (c *logCache) dropBelow(b logstore.Bucket, off int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if off <= c.floor[b] {
		return
	}
	c.floor[b] = off
	for base, e := range c.buckets[b] {
		if base+e.rec.NumRows() <= off {
			c.release(b, base, e)
		}
	}
}

// dropTable releases every entry of a table's log.
func (c *logCache) dropTable(table string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for b, m := range c.buckets {
		if b.Table == table {
			for base, e := range m {
				c.release(b, base, e)
			}
		}
	}
	for b := range c.floor {
		if b.Table == table {
			delete(c.floor, b)
		}
	}
}

func (c *logCache) release(b logstore.Bucket, base int64, e *cachedEntry) {
	e.rec.Release()
	*c.budget(e.size) -= e.size
	delete(c.buckets[b], base)
	if len(c.buckets[b]) == 0 {
		delete(c.buckets, b)
	}
}

// run is consecutive cached entries of one bucket and schema, retained for
// a reader.
type run struct {
	base    int64
	rows    int64
	schema  int64
	entries []*cachedEntry
}

func (r *run) release() {
	for _, e := range r.entries {
		e.rec.Release()
	}
}

// smallRun returns the consecutive cached entries of b from offset from on
// that each hold fewer than below rows, together at most most rows and
// ending at or before to; nil unless there are at least two, and nil when
// the first holds more rows than the others together (the reader takes it
// as it is and looks for a run after it). So entries are joined like the
// digits of a binary counter: a bucket read after every small write sees
// O(log n) entries, and joins O(log n) rows per write on average, where
// joining the whole run every time copied every un-tiered row of the bucket
// for every read (a point query over 10k single-row writes: 64 us of its
// 340).
func (c *logCache) smallRun(b logstore.Bucket, from, to, below, most int64) *run {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.buckets[b]
	r := &run{base: from}
	for off := from; ; {
		e := m[off]
		if e == nil {
			break
		}
		n := e.rec.NumRows()
		if n >= below || off+n > to || r.rows+n > most || (len(r.entries) > 0 && e.schema != r.schema) {
			break
		}
		r.schema = e.schema
		r.entries = append(r.entries, e)
		r.rows += n
		off += n
	}
	if len(r.entries) < 2 || 2*r.entries[0].rec.NumRows() > r.rows {
		return nil
	}
	for _, e := range r.entries {
		e.rec.Retain()
	}
	return r
}

// replaceRun keeps rec (retained), the rows of r joined, in place of r's
// entries, if they are all still cached and the budget allows; otherwise it
// changes nothing.
func (c *logCache) replaceRun(b logstore.Bucket, r *run, rec arrow.RecordBatch, kinds []byte) {
	size := arrowutil.RecordBytes(rec) + int64(len(kinds))
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.buckets[b]
	off := r.base
	for _, e := range r.entries {
		if m[off] != e {
			return // dropped or replaced meanwhile
		}
		off += e.rec.NumRows()
	}
	if size >= smallEntryBytes && c.bytes+size > c.limit {
		return // the joined rows would be a large entry, and there is no room for one
	}
	var parts []entryPart
	for _, e := range r.entries {
		parts = append(parts, e.entries()...)
	}
	at := r.entries[0].at // the run's oldest write
	off = r.base
	for _, e := range r.entries {
		n := e.rec.NumRows()
		c.release(b, off, e)
		off += n
	}
	m = c.buckets[b]
	if m == nil {
		m = map[int64]*cachedEntry{}
		c.buckets[b] = m
	}
	rec.Retain()
	m[r.base] = &cachedEntry{rec: rec, schema: r.schema, kinds: kinds, size: size, at: at, parts: parts}
	*c.budget(size) += size
}
