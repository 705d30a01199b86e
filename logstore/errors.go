package logstore

import (
	"errors"
	"fmt"
	"syscall"
)

var (
	// ErrClosed is returned by every call on a Store after Close.
	ErrClosed = errors.New("logstore: closed")
	// ErrDiskBudget: the append would take the log past Options.DiskBudget.
	ErrDiskBudget = errors.New("logstore: disk budget exceeded")
	// ErrDiskFull: the log's file system refused a write for lack of space (ENOSPC) or
	// quota (EDQUOT). It also matches ErrDiskBudget (errors.Is), so that callers refuse
	// it as they refuse an append over the budget: the log is out of disk. See Append
	// for what was written.
	ErrDiskFull error = diskFull{}
	// ErrTruncated is returned by Read when the requested range starts below the bucket's
	// log start: those entries were deleted by Truncate.
	ErrTruncated = errors.New("logstore: offset truncated")
	// ErrAppendTooLarge is returned when one Append does not fit into one Badger
	// transaction (a limit of Badger's, ~15% of the memtable size counting small values
	// in full and large values as pointers). Nothing is written.
	ErrAppendTooLarge = errors.New("logstore: append too large for one transaction")
	// ErrInvalidEntry is returned for an entry with Rows < 1.
	ErrInvalidEntry = errors.New("logstore: invalid entry")
	// ErrCorrupt marks bad bytes on disk; match it with errors.Is. The concrete error is a
	// *CorruptionError naming the key.
	ErrCorrupt = errors.New("logstore: corrupt")
)

// CorruptionError reports bytes in the store that do not decode, or a log that breaks
// an invariant (a gap below the high watermark). errors.Is(err, ErrCorrupt) holds.
type CorruptionError struct {
	Key []byte // the Badger key, if known
	Err error  // what is wrong
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("logstore: corrupt record at key %x: %v", e.Key, e.Err)
}

// Unwrap returns the underlying cause.
func (e *CorruptionError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCorrupt) true for every CorruptionError.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }

func corruptf(key []byte, format string, args ...any) error {
	return &CorruptionError{Key: append([]byte(nil), key...), Err: fmt.Errorf(format, args...)}
}

type diskFull struct{}

func (diskFull) Error() string { return "logstore: disk full" }

// Is makes errors.Is(ErrDiskFull, ErrDiskBudget) true.
func (diskFull) Is(target error) bool { return target == ErrDiskBudget }

// isNoSpace reports a write refused for lack of space or quota.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
