package logstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Truncate deletes the bucket's entries that end at or below below (every offset of
// the entry < below). It never deletes an entry containing an offset >= below, and
// below is clamped to the high watermark. Afterwards the bucket's log start is the
// base of its first remaining entry (or the high watermark if none remains) and Read
// below it returns ErrTruncated. The new log start is written in the same Badger
// transaction as the first deletions, so after a crash the log start is never below a
// deleted entry; leftover entries below the log start are deleted by the next Truncate.
func (s *Store) Truncate(ctx context.Context, b Bucket, below int64) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	s.adminMu.Lock()
	defer s.adminMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}

	s.mu.RLock()
	var st *bucketState
	if t := s.tables[b.Table]; t != nil {
		st = t.buckets[b.Bucket]
	}
	var hw, start int64
	if st != nil {
		hw, start = st.hw, st.start
	}
	s.mu.RUnlock()
	if st == nil {
		return nil
	}
	below = min(below, hw)

	// Collect the keys below `below`. Entries are contiguous, so an entry ends where the
	// next begins; the last one ends at the first key at or above below, or at hw.
	var keys [][]byte
	var bases []int64
	nextBase := hw
	err := s.db.View(func(txn *badger.Txn) error {
		prefix := appendBucketPrefix(nil, prefixEntry, b)
		opt := badger.DefaultIteratorOptions
		opt.PrefetchValues = false
		opt.Prefix = prefix
		it := txn.NewIterator(opt)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k := it.Item().Key()
			_, _, base, err := parseKey(k)
			if err != nil {
				return corruptf(k, "entry key: %v", err)
			}
			if base >= below {
				nextBase = base
				break
			}
			keys = append(keys, it.Item().KeyCopy(nil))
			bases = append(bases, base)
			if len(keys)%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("logstore: truncate %v: %w", b, err)
	}
	// Keep the last collected entry if it reaches past below.
	newStart := start
	n := len(keys)
	if n > 0 {
		if nextBase > below {
			newStart = max(start, bases[n-1])
			n--
		} else {
			newStart = max(start, nextBase)
		}
	}
	if n == 0 && newStart == start {
		return nil
	}

	meta := appendMeta(nil, newStart)
	if err := s.writeBatches(ctx, appendBucketPrefix(nil, prefixMeta, b), meta, keys[:n]); err != nil {
		return fmt.Errorf("logstore: truncate %v below %d: %w", b, below, err)
	}
	s.mu.Lock()
	st.start = newStart
	s.mu.Unlock()
	return nil
}

// writeBatches sets setKey (if not nil) to setVal and deletes dels, in as few Badger
// transactions as its limits allow. The set goes into the first transaction.
func (s *Store) writeBatches(ctx context.Context, setKey, setVal []byte, dels [][]byte) error {
	for first := true; first || len(dels) > 0; first = false {
		if err := ctx.Err(); err != nil {
			return err
		}
		txn := s.db.NewTransaction(true)
		var size, count int64
		if first && setKey != nil {
			if err := txn.Set(setKey, setVal); err != nil {
				txn.Discard()
				return err
			}
			size, count = int64(len(setKey)+len(setVal))+12, 1
		}
		for len(dels) > 0 {
			k := dels[0]
			if size+int64(len(k))+12 >= s.maxTxnSize || count+1 >= s.maxTxnCount {
				break
			}
			if err := txn.Delete(k); err != nil {
				txn.Discard()
				return err
			}
			size += int64(len(k)) + 12
			count++
			dels = dels[1:]
		}
		if err := txn.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// DropTable deletes every bucket of the table. It acts as a barrier in the append
// queue: appends queued before it are committed and then deleted with the table;
// appends queued after it start a new log for the same table id at offset 0. The
// high watermarks of the table read 0 as soon as DropTable is queued.
//
// Deletion takes several Badger transactions. The first records every bucket's log
// start at its high watermark, so that after a crash in the middle a partly dropped
// bucket reads as fully truncated (same high watermark, Read returns ErrTruncated)
// and a second DropTable finishes the job. A Read of the table racing DropTable may
// fail.
func (s *Store) DropTable(ctx context.Context, table string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	s.adminMu.Lock()
	defer s.adminMu.Unlock()

	req := &request{kind: reqDrop, table: table, done: make(chan error, 1)}
	s.mu.Lock()
	if err := ctx.Err(); err != nil {
		s.mu.Unlock()
		return err
	}
	if s.failErr != nil {
		err := s.failErr
		s.mu.Unlock()
		return err
	}
	req.oldTable = s.tables[table]
	delete(s.tables, table)
	s.notifyLocked() // readers of the table see it gone
	s.queue = append(s.queue, req)
	s.mu.Unlock()
	s.signal()
	if err := <-req.done; err != nil {
		return fmt.Errorf("logstore: drop table %q: %w", table, err)
	}
	return nil
}

// execDrop runs in the committer, after every append queued before the drop.
func (s *Store) execDrop(req *request) error {
	ctx := context.Background() // the drop is queued; it runs to the end like an append
	var metas [][]byte
	var metaVals [][]byte
	if req.oldTable != nil {
		s.mu.RLock()
		for id, st := range req.oldTable.buckets {
			if st.hw > 0 {
				metas = append(metas, appendBucketPrefix(nil, prefixMeta, Bucket{Table: req.table, Bucket: id}))
				metaVals = append(metaVals, appendMeta(nil, st.hw))
			}
		}
		s.mu.RUnlock()
	}
	// 1. Mark every bucket as truncated up to its high watermark.
	if len(metas) > 0 {
		txn := s.db.NewTransaction(true)
		for i := range metas {
			if err := txn.Set(metas[i], metaVals[i]); err != nil {
				txn.Discard()
				return err
			}
		}
		if err := txn.Commit(); err != nil {
			return err
		}
	}
	// 2. Delete the table's segment records (its buckets read as truncated now, so no
	// read needs them), 3. the entries, then 4. the meta records (also ones left by an
	// earlier crash).
	var recs [][]byte
	if err := s.scanSegmentRecords(func(k []byte, _ uint64, b Bucket, _ int64) {
		if b.Table == req.table {
			recs = append(recs, k)
		}
	}); err != nil {
		return err
	}
	if err := s.writeBatches(ctx, nil, nil, recs); err != nil {
		return err
	}
	for _, kind := range []byte{prefixEntry, prefixMeta} {
		var keys [][]byte
		err := s.db.View(func(txn *badger.Txn) error {
			opt := badger.DefaultIteratorOptions
			opt.PrefetchValues = false
			opt.Prefix = appendTablePrefix(nil, kind, req.table)
			it := txn.NewIterator(opt)
			defer it.Close()
			for it.Rewind(); it.Valid(); it.Next() {
				keys = append(keys, it.Item().KeyCopy(nil))
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := s.writeBatches(ctx, nil, nil, keys); err != nil {
			return err
		}
	}
	return nil
}

// CollectGarbage deletes segment files whose entries were all removed by
// Truncate or DropTable, and rewrites Badger value-log files of which at least
// half is garbage, so that disk use follows the data. It returns when no file
// qualifies.
func (s *Store) CollectGarbage() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := s.collectSegments(); err != nil {
		return fmt.Errorf("logstore: collect segments: %w", err)
	}
	for {
		err := s.db.RunValueLogGC(0.5)
		switch {
		case err == nil:
			continue
		case errors.Is(err, badger.ErrNoRewrite), errors.Is(err, badger.ErrRejected):
			return nil
		default:
			return fmt.Errorf("logstore: value log GC: %w", err)
		}
	}
}

// Start returns the bucket's log start: offsets below it were truncated.
func (s *Store) Start(b Bucket) int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if t := s.tables[b.Table]; t != nil {
		if st := t.buckets[b.Bucket]; st != nil {
			return st.start
		}
	}
	return 0
}

// scanSegmentRecords calls fn for every segment record (see segKey), in one snapshot.
// k is a copy.
func (s *Store) scanSegmentRecords(fn func(k []byte, id uint64, b Bucket, end int64)) error {
	return s.db.View(func(txn *badger.Txn) error {
		opt := badger.DefaultIteratorOptions
		opt.Prefix = []byte{prefixSegment}
		it := txn.NewIterator(opt)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			k := item.KeyCopy(nil)
			id, b, err := parseSegKey(k)
			if err != nil {
				return corruptf(k, "segment key: %v", err)
			}
			var end uint64
			if err := item.Value(func(v []byte) error {
				d := decbuf{b: v}
				end = d.uvarint()
				return d.finish()
			}); err != nil {
				return corruptf(k, "segment record: %v", err)
			}
			fn(k, id, b, int64(end))
		}
		return nil
	})
}

// collectSegments deletes the sealed segments that no entry needs: every bucket with
// entries in it has its log start at or above its end there, or is gone. Segments
// without records are leftovers of a crash between writing a segment and committing
// its entries. The records of deleted segments go last, after their files.
func (s *Store) collectSegments() error {
	sealed, err := s.segs.sealed() // before the snapshot: the records of sealed segments are committed
	if err != nil || len(sealed) == 0 {
		return err
	}
	live := map[uint64]bool{}
	recs := map[uint64][][]byte{}
	err = s.scanSegmentRecords(func(k []byte, id uint64, b Bucket, end int64) {
		recs[id] = append(recs[id], k)
		s.mu.RLock()
		if t := s.tables[b.Table]; t != nil {
			if st := t.buckets[b.Bucket]; st != nil && st.start < end {
				live[id] = true
			}
		}
		s.mu.RUnlock()
	})
	if err != nil {
		return err
	}
	var dels [][]byte
	for _, id := range sealed {
		if live[id] {
			continue
		}
		if err := s.segs.remove(id); err != nil {
			return err
		}
		dels = append(dels, recs[id]...)
	}
	return s.writeBatches(context.Background(), nil, nil, dels)
}
