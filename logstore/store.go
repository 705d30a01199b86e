package logstore

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// Bucket names one log: a table (by a stable id string chosen by the caller, e.g. a
// uuid) and a bucket number.
type Bucket struct {
	Table  string
	Bucket int32
}

// Entry is one value appended to a bucket's log. It occupies Rows offsets.
type Entry struct {
	Bucket  Bucket
	Rows    int64 // >= 1
	Payload []byte
}

// Store is a durable log per table bucket on one Badger database. All methods are safe
// for concurrent use.
type Store struct {
	dir    string
	db     *badger.DB
	segs   *segments
	opts   Options
	budget *budget
	log    *slog.Logger
	bl     *badgerLogger

	// Badger's per-transaction limits with a safety margin (see Append).
	maxTxnSize, maxTxnCount int64

	// mu guards everything below it. Offsets are assigned and requests queued under mu,
	// and the committer advances high watermarks under mu, so a reader holding mu sees
	// a consistent cut.
	mu       sync.RWMutex
	tables   map[string]*tableState
	queue    []*request // FIFO; offset order within every bucket
	closed   bool
	failErr  error          // sticky: set when a commit fails, see commitLoop
	inflight sync.WaitGroup // Read, Truncate, DropTable calls that Close waits for

	wake chan struct{} // cap 1: "the queue is not empty or the store is closing"
	// advanced is closed, and replaced, whenever high watermarks advance, a
	// table is dropped or the store closes (see Advanced). Guarded by mu.
	advanced chan struct{}
	done     chan struct{} // closed when the committer exits

	// adminMu serializes Truncate and DropTable with each other.
	adminMu sync.Mutex

	closeOnce sync.Once
	closeErr  error

	stats struct { // guarded by mu; read by tests and benchmarks
		commits  int64 // group commits
		requests int64 // Append calls committed
	}
}

type tableState struct {
	buckets map[int32]*bucketState
}

type bucketState struct {
	hw    int64 // exclusive durable end: what readers may see
	next  int64 // next offset to assign; next >= hw, the difference is in flight
	start int64 // log start: offsets below it were truncated
}

// Open opens or creates the store in dir and recovers every bucket's high watermark.
func Open(dir string, opts Options) (*Store, error) {
	opts.fill()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	sys := opts.sys
	if sys == nil {
		sys = osOps
	}
	// Badger creates a missing directory without syncing its parent: a power cut could
	// take the whole log with it.
	if err := sys.mkdirAll(dir, opts.SyncWrites); err != nil {
		return nil, fmt.Errorf("logstore: create %s: %w", dir, err)
	}
	bl := &badgerLogger{l: opts.Logger}
	db, err := badger.Open(opts.badgerOptions(dir, bl))
	if err != nil {
		return nil, fmt.Errorf("logstore: open badger %s: %w", dir, err)
	}
	segs, err := openSegments(dir, opts.SegmentSize, opts.SyncWrites, sys)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("logstore: open segments: %w", err), db.Close())
	}
	s := &Store{
		dir:         dir,
		db:          db,
		segs:        segs,
		opts:        opts,
		log:         opts.Logger,
		bl:          bl,
		budget:      newBudget(dir, opts.DiskBudget, opts.MinFree),
		maxTxnSize:  db.MaxBatchSize() * 9 / 10,
		maxTxnCount: db.MaxBatchCount() * 9 / 10,
		tables:      make(map[string]*tableState),
		wake:        make(chan struct{}, 1),
		done:        make(chan struct{}),
		advanced:    make(chan struct{}),
	}
	if err := s.checkFormat(); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	if err := s.recover(); err != nil {
		return nil, errors.Join(fmt.Errorf("logstore: recover: %w", err), db.Close())
	}
	// Segments a crash left without entries (written, never committed) go now.
	if err := s.collectSegments(); err != nil {
		return nil, errors.Join(fmt.Errorf("logstore: collect segments: %w", err), db.Close())
	}
	go s.commitLoop()
	return s, nil
}

func (s *Store) checkFormat() error {
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(formatKey)
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if len(v) != 1 || v[0] > formatVersion || v[0] < 1 {
				return fmt.Errorf("logstore: unsupported format %x (this build reads up to %d)", v, formatVersion)
			}
			if v[0] < formatVersion {
				return badger.ErrKeyNotFound // upgrade below: older formats stay readable
			}
			return nil
		})
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		err = s.db.Update(func(txn *badger.Txn) error {
			return txn.Set(formatKey, []byte{formatVersion})
		})
	}
	return err
}

// recover rebuilds the in-memory state: the log start of every bucket from its meta
// record, and the high watermark from the last entry of every bucket (seeking from
// bucket to bucket, never scanning a whole log).
func (s *Store) recover() error {
	txn := s.db.NewTransaction(false)
	defer txn.Discard()

	mo := badger.DefaultIteratorOptions
	mo.Prefix = []byte{prefixMeta}
	mit := txn.NewIterator(mo)
	for mit.Rewind(); mit.Valid(); mit.Next() {
		item := mit.Item()
		k := item.Key()
		kind, b, _, err := parseKey(k)
		if err != nil || kind != prefixMeta {
			mit.Close()
			return corruptf(k, "meta key: %v", err)
		}
		var start int64
		if err := item.Value(func(v []byte) error {
			var err error
			start, err = decodeMeta(k, v)
			return err
		}); err != nil {
			mit.Close()
			return err
		}
		st := s.stateLocked(b)
		st.start, st.hw, st.next = start, start, start
	}
	mit.Close()

	fo := badger.DefaultIteratorOptions
	fo.PrefetchValues = false
	fo.Prefix = []byte{prefixEntry}
	fwd := txn.NewIterator(fo)
	defer fwd.Close()
	ro := fo
	ro.Reverse = true
	rev := txn.NewIterator(ro)
	defer rev.Close()

	nbuckets := 0
	for fwd.Rewind(); fwd.Valid(); {
		k := fwd.Item().Key()
		_, b, _, err := parseKey(k)
		if err != nil {
			return corruptf(k, "entry key: %v", err)
		}
		end := bucketEnd(appendBucketPrefix(nil, prefixEntry, b))
		rev.Seek(end)
		if !rev.Valid() {
			return corruptf(end, "reverse seek found no entry")
		}
		item := rev.Item()
		lk := item.KeyCopy(nil)
		_, lb, base, err := parseKey(lk)
		if err != nil || lb != b {
			return corruptf(lk, "last entry key: %v (bucket %v)", err, lb)
		}
		var rows int64
		if err := item.Value(func(v []byte) error {
			rows, err = decodeRecordRows(lk, v)
			return err
		}); err != nil {
			return err
		}
		st := s.stateLocked(b)
		if e := base + rows; e > st.hw {
			st.hw, st.next = e, e
		}
		nbuckets++
		fwd.Seek(append(end, 0))
	}
	s.log.Info("logstore: recovered", "tables", len(s.tables), "bucket_logs", nbuckets)
	return nil
}

// stateLocked returns the state of bucket b, creating it. Callers hold mu (or own s).
func (s *Store) stateLocked(b Bucket) *bucketState {
	t := s.tables[b.Table]
	if t == nil {
		t = &tableState{buckets: make(map[int32]*bucketState)}
		s.tables[b.Table] = t
	}
	st := t.buckets[b.Bucket]
	if st == nil {
		st = &bucketState{}
		t.buckets[b.Bucket] = st
	}
	return st
}

// enter registers an operation that Close must wait for.
func (s *Store) enter() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	s.inflight.Add(1)
	return nil
}

func (s *Store) leave() { s.inflight.Done() }

// Close waits for queued appends and running calls, then closes Badger (which flushes
// its memtable). Later calls return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.notifyLocked()
		s.mu.Unlock()
		s.signal()
		<-s.done
		s.inflight.Wait()
		var errs []error
		if err := s.segs.close(); err != nil {
			errs = append(errs, fmt.Errorf("logstore: close segments: %w", err))
		}
		if err := s.db.Close(); err != nil {
			errs = append(errs, fmt.Errorf("logstore: close badger: %w", err))
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// HighWatermark returns the bucket's exclusive durable end offset (0 for an unknown
// bucket).
func (s *Store) HighWatermark(b Bucket) int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if t := s.tables[b.Table]; t != nil {
		if st := t.buckets[b.Bucket]; st != nil {
			return st.hw
		}
	}
	return 0
}

// HighWatermarks returns the high watermark of every bucket of the table that has a
// log, as one consistent cut: an Append that touched several buckets is in all of them
// or in none.
func (s *Store) HighWatermarks(table string) map[int32]int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[int32]int64)
	if t := s.tables[table]; t != nil {
		for id, st := range t.buckets {
			if st.hw > 0 {
				out[id] = st.hw
			}
		}
	}
	return out
}

// Advanced returns a channel that is closed the next time a commit advances
// high watermarks, a table is dropped, or the store closes. A reader waiting
// for new entries takes it before reading the high watermarks, so that no
// commit falls between the two unnoticed. Every commit wakes every waiter
// (readers of other tables check their watermarks and wait again): cheap for
// the few long-lived readers it serves.
func (s *Store) Advanced() <-chan struct{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.advanced
}

// notifyLocked wakes the waiters of Advanced; s.mu must be held for writing.
func (s *Store) notifyLocked() {
	close(s.advanced)
	s.advanced = make(chan struct{})
}

// Buckets lists, in ascending order, the buckets of the table that have a log (a high
// watermark above 0).
func (s *Store) Buckets(table string) []int32 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []int32
	if t := s.tables[table]; t != nil {
		for id, st := range t.buckets {
			if st.hw > 0 {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}
