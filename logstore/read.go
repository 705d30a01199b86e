package logstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Read calls fn for each entry of the bucket that overlaps [from, to), in offset order.
// base is the entry's first offset; an entry may start before from or end after to
// (the caller slices). The payload is only valid during fn; fn must not keep it.
//
// Only durable entries are read: to is clamped to the high watermark taken when Read
// starts, and the read sees one Badger snapshot. If from lies below the bucket's log
// start (Truncate deleted those entries), Read returns ErrTruncated and calls fn for
// nothing. An error from fn stops the read and is returned as is. ctx is checked
// before every entry.
func (s *Store) Read(ctx context.Context, b Bucket, from, to int64, fn func(base int64, rows int64, payload []byte) error) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := ctx.Err(); err != nil {
		return err
	}
	if from < 0 {
		from = 0
	}
	// Take the high watermark before opening the snapshot: every entry below it was
	// committed before, so the snapshot holds it.
	if hw := s.HighWatermark(b); to > hw {
		to = hw
	}
	if from >= to {
		return nil
	}

	txn := s.db.NewTransaction(false)
	defer txn.Discard()

	start, err := readLogStart(txn, b)
	if err != nil {
		return err
	}
	if from < start {
		return fmt.Errorf("%w: read %v from %d, log starts at %d", ErrTruncated, b, from, start)
	}

	prefix := appendBucketPrefix(nil, prefixEntry, b)
	opt := badger.DefaultIteratorOptions
	opt.PrefetchValues = false
	opt.Prefix = prefix

	// Find the entry containing from: the last entry with base <= from.
	first := from
	ro := opt
	ro.Reverse = true
	rev := txn.NewIterator(ro)
	rev.Seek(entryKey(nil, b, from))
	if rev.Valid() {
		_, _, base, err := parseKey(rev.Item().Key())
		if err != nil {
			k := rev.Item().KeyCopy(nil)
			rev.Close()
			return corruptf(k, "entry key: %v", err)
		}
		first = base
	}
	rev.Close()

	it := txn.NewIterator(opt)
	defer it.Close()
	next := int64(-1) // expected base of the next entry: entries are contiguous
	var buf []byte    // segment records, reused: a payload is valid only during fn
	for it.Seek(entryKey(nil, b, first)); it.Valid(); it.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		item := it.Item()
		key := item.Key()
		_, _, base, err := parseKey(key)
		if err != nil {
			return corruptf(key, "entry key: %v", err)
		}
		if base >= to {
			break
		}
		if next >= 0 && base != next {
			return corruptf(key, "gap in %v: entry at %d, expected %d (high watermark %d)", b, base, next, to)
		}
		err = item.Value(func(v []byte) error {
			rows, payload, ptr, err := decodeValue(key, v)
			if err != nil {
				return err
			}
			next = base + rows
			if next <= from {
				return nil // ends before the range
			}
			if ptr != nil {
				if payload, err = s.readSegment(key, rows, *ptr, &buf); err != nil {
					return err
				}
			}
			return fn(base, rows, payload)
		})
		if err != nil {
			return err
		}
	}
	if next >= 0 && next < to {
		return corruptf(entryKey(nil, b, next), "gap in %v: log ends at %d below high watermark %d", b, next, to)
	}
	if next < 0 {
		return corruptf(entryKey(nil, b, first), "no entry in %v for [%d, %d) below high watermark", b, from, to)
	}
	return nil
}

// readLogStart returns the bucket's log start recorded by Truncate (0 if none).
func readLogStart(txn *badger.Txn, b Bucket) (int64, error) {
	mk := appendBucketPrefix(nil, prefixMeta, b)
	item, err := txn.Get(mk)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read meta of %v: %w", b, err)
	}
	var start int64
	err = item.Value(func(v []byte) error {
		start, err = decodeMeta(mk, v)
		return err
	})
	return start, err
}

// readSegment reads the record of the entry at key from its segment into *buf and
// returns its payload.
func (s *Store) readSegment(key []byte, rows int64, p segPtr, buf *[]byte) ([]byte, error) {
	rec, err := s.segs.read(p, *buf)
	if errors.Is(err, errSegmentGone) {
		// Only segments whose entries are all below their log starts are deleted: the
		// read raced a Truncate.
		return nil, fmt.Errorf("%w: entry %x: %v", ErrTruncated, key, err)
	}
	if errors.Is(err, errChecksum) {
		return nil, corruptf(key, "%v", err)
	}
	if err != nil {
		return nil, fmt.Errorf("logstore: entry %x: %w", key, err)
	}
	*buf = rec
	r, payload, err := decodeRecord(key, rec)
	if err != nil {
		return nil, err
	}
	if r != rows {
		return nil, corruptf(key, "segment record of %d rows, entry says %d", r, rows)
	}
	return payload, nil
}
