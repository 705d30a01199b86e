package lakestream

import (
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/logstore"
)

// DefaultLogCacheBytes bounds the decoded log entries kept in memory.
const DefaultLogCacheBytes = 256 << 20

// logCache keeps decoded log entries of the un-tiered delta, by bucket and
// base offset, so that t$rt reads and tiering rounds do not read and decode
// the log again. Entries are added when a write is durable (or when a read
// had to decode them) and dropped once the lake holds them. Past its byte
// limit the cache takes nothing more and reads go to the log.
type logCache struct {
	mu      sync.Mutex
	limit   int64
	bytes   int64
	buckets map[logstore.Bucket]map[int64]*cachedEntry
}

type cachedEntry struct {
	rec   arrow.RecordBatch
	kinds []byte
	size  int64
	at    time.Time // when the entry was written
}

func newLogCache(limit int64) *logCache {
	return &logCache{limit: limit, buckets: map[logstore.Bucket]map[int64]*cachedEntry{}}
}

// put keeps rec (retained) as the entry at base of b, written at at.
func (c *logCache) put(b logstore.Bucket, base int64, rec arrow.RecordBatch, kinds []byte, at time.Time) {
	size := recordSize(rec) + int64(len(kinds))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes+size > c.limit {
		return
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
	m[base] = &cachedEntry{rec: rec, kinds: kinds, size: size, at: at}
	c.bytes += size
}

// get returns the entry at base of b, retained for the caller.
func (c *logCache) get(b logstore.Bucket, base int64) (arrow.RecordBatch, []byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.buckets[b][base]
	if e == nil {
		return nil, nil, false
	}
	e.rec.Retain()
	return e.rec, e.kinds, true
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

// dropBelow releases the entries of b that end at or below off.
func (c *logCache) dropBelow(b logstore.Bucket, off int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
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
}

func (c *logCache) release(b logstore.Bucket, base int64, e *cachedEntry) {
	e.rec.Release()
	c.bytes -= e.size
	delete(c.buckets[b], base)
	if len(c.buckets[b]) == 0 {
		delete(c.buckets, b)
	}
}

func recordSize(rec arrow.RecordBatch) int64 {
	var n int64
	for _, col := range rec.Columns() {
		n += dataSize(col.Data())
	}
	return n
}

func dataSize(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataSize(c)
	}
	return n
}
