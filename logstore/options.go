package logstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
)

// Options configure a Store. Zero numeric fields mean "use the default"; see DefaultOptions.
type Options struct {
	// SyncWrites: acknowledge an Append only after it is durable (fdatasync of the
	// segment file, msync of Badger's memtable WAL). DefaultOptions sets it; the zero
	// Options value does not.
	SyncWrites bool
	// Logger receives the store's messages and Badger's warnings and errors. nil discards.
	Logger *slog.Logger

	// ValueThreshold: entry values of at least this many bytes go to segment files and
	// Badger keeps a pointer; smaller ones live in Badger's LSM tree. Default 64 KiB
	// (measured: a ~1 MB value kept in the LSM tree appends 4x slower).
	ValueThreshold int64
	// SegmentSize is the size at which the committer starts a new segment file; a
	// sealed segment is deleted once every entry in it is truncated. Default 128 MiB.
	SegmentSize int64
	// MemTableSize is Badger's memtable size. One Append must fit in ~15% of it (entry
	// keys plus values below ValueThreshold). Default 64 MiB.
	MemTableSize int64
	// NumMemtables is how many memtables Badger keeps before stalling writes. Default 3.
	NumMemtables int
	// BlockCacheSize is Badger's block cache. Only keys and small values live in blocks.
	// Default 32 MiB.
	BlockCacheSize int64
	// NumCompactors is Badger's compactor count (at least 2). Default 2.
	NumCompactors int
	// ValueLogFileSize is the size at which Badger starts a new value-log file. Values
	// at or above ValueThreshold go to segment files instead, so only stores written
	// before segment files have value-log data. Default 1 GiB - 1.
	ValueLogFileSize int64
	// MaxGroupBytes caps the payload bytes the committer puts in one group commit.
	// Default 64 MiB.
	MaxGroupBytes int64
	// DiskBudget, when positive, is the most bytes the log's directory may use:
	// an Append that would exceed it fails with ErrDiskBudget and writes nothing.
	// The directory is measured every 2 s; appends in between are counted exactly.
	// Space comes back as whole segments are deleted (SegmentSize each) and as Badger
	// compacts its LSM tree, so leave room for a few segments above the un-tiered data.
	DiskBudget int64
	// MinFree is the free space the log leaves on its file system: an Append
	// that would leave less fails with ErrDiskFull and writes nothing (Badger
	// writes its memtables through memory-mapped files, and a page of one that
	// finds the disk full ends the process instead of returning ENOSPC).
	// Measured every 2 s like DiskBudget. 0: DefaultMinFree; negative: none.
	MinFree int64

	// maxGroupRequests caps the Append calls per group commit; 0 = unlimited. Tests and
	// benchmarks set it to 1 to measure the store without group commit.
	maxGroupRequests int
	// sys replaces the file system calls of the store's own files (tests); nil: the OS.
	sys *sysOps
}

// DefaultMinFree is the free space the log leaves on its file system
// unless Options.MinFree says otherwise: more than a memtable.
const DefaultMinFree = 128 << 20

// DefaultOptions returns the recommended options: synced writes and the defaults above.
func DefaultOptions() Options {
	o := Options{SyncWrites: true}
	o.fill()
	return o
}

// fill replaces zero fields with defaults.
func (o *Options) fill() {
	if o.ValueThreshold <= 0 {
		o.ValueThreshold = 64 << 10
	}
	if o.MemTableSize <= 0 {
		o.MemTableSize = 64 << 20
	}
	if o.NumMemtables <= 0 {
		o.NumMemtables = 3
	}
	if o.BlockCacheSize <= 0 {
		o.BlockCacheSize = 32 << 20
	}
	if o.NumCompactors <= 0 {
		o.NumCompactors = 2
	}
	if o.SegmentSize <= 0 {
		o.SegmentSize = 128 << 20
	}
	if o.ValueLogFileSize <= 0 {
		o.ValueLogFileSize = 1<<30 - 1
	}
	if o.MaxGroupBytes <= 0 {
		o.MaxGroupBytes = 64 << 20
	}
	if o.MinFree == 0 {
		o.MinFree = DefaultMinFree
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

func (o *Options) validate() error {
	if o.NumCompactors < 2 {
		return fmt.Errorf("logstore: NumCompactors %d: Badger needs at least 2", o.NumCompactors)
	}
	// Badger rejects a ValueThreshold above 15% of the memtable size.
	if o.ValueThreshold > o.MemTableSize*15/100 {
		return fmt.Errorf("logstore: ValueThreshold %d above 15%% of MemTableSize %d", o.ValueThreshold, o.MemTableSize)
	}
	return nil
}

func (o *Options) badgerOptions(dir string, bl *badgerLogger) badger.Options {
	return badger.DefaultOptions(dir).
		WithSyncWrites(o.SyncWrites).
		WithLogger(bl).
		WithValueThreshold(o.ValueThreshold).
		WithMemTableSize(o.MemTableSize).
		WithNumMemtables(o.NumMemtables).
		WithBlockCacheSize(o.BlockCacheSize).
		WithNumCompactors(o.NumCompactors).
		WithValueLogFileSize(o.ValueLogFileSize).
		WithNumVersionsToKeep(1).
		// Every key is written once by one goroutine (the committer) or deleted under
		// adminMu: there is nothing for Badger to detect.
		WithDetectConflicts(false).
		WithMetricsEnabled(false)
}

// badgerLogger routes Badger's warnings and errors to slog and drops its info and debug
// chatter. It also counts value-log sync failures: Badger v4.9.6 logs a failed msync of
// the value log in valueLog.write but does not return it, so the committer checks the
// count around each commit and fails the store instead of acknowledging.
type badgerLogger struct {
	l          *slog.Logger
	syncErrors atomic.Int64
}

func (b *badgerLogger) Errorf(f string, v ...any) {
	msg := strings.TrimSpace(fmt.Sprintf(f, v...))
	if strings.Contains(msg, "curlf sync") {
		b.syncErrors.Add(1)
	}
	b.l.Log(context.Background(), slog.LevelError, "badger: "+msg)
}

func (b *badgerLogger) Warningf(f string, v ...any) {
	b.l.Log(context.Background(), slog.LevelWarn, "badger: "+strings.TrimSpace(fmt.Sprintf(f, v...)))
}

func (b *badgerLogger) Infof(string, ...any)  {}
func (b *badgerLogger) Debugf(string, ...any) {}
