// Package logcodec encodes the value that flightd stores in one log entry: an
// Arrow record batch with the table's columns, plus, for primary-key tables,
// one change kind per row.
//
// Layout (version 3):
//
//	byte    format version (3)
//	byte    flags: bit 0 set when a kinds column follows
//	int64   write time, Unix milliseconds, big-endian (versions 2 and 3)
//	int64   the id of the table schema the rows were written under, big-endian (version 3)
//	[n]byte kinds, one Paimon RowKind byte per row (+I=0, -U=1, +U=2, -D=3), when flagged
//	...     Arrow IPC stream (schema message, one record batch, end-of-stream marker)
//
// Version 2 is the same without the schema id, version 1 without the write time
// either; Decode reads all three. The schema id tells a reader which columns
// the batch holds when the table's schema has changed since (see SchemaID).
//
// The row count lives in the log entry itself (logstore.Entry.Rows) and must
// equal the batch's row count; Decode checks it.
package logcodec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/internal/ipccheck"
)

const (
	version1 = 1
	version2 = 2
	version3 = 3
)

const flagKinds = 1

// ErrCorrupt marks a payload that cannot be decoded.
var ErrCorrupt = errors.New("logcodec: corrupt log entry")

// Encode serialises rec and, when kinds is non-nil, its row kinds, stamped
// with the current time and schemaID, the table schema rec's columns are of.
func Encode(rec arrow.RecordBatch, kinds []byte, schemaID int64) ([]byte, error) {
	if kinds != nil && int64(len(kinds)) != rec.NumRows() {
		return nil, fmt.Errorf("logcodec: %d kinds for %d rows", len(kinds), rec.NumRows())
	}
	var buf bytes.Buffer
	buf.Grow(int(estimateSize(rec)) + len(kinds) + 256)
	flags := byte(0)
	if kinds != nil {
		flags |= flagKinds
	}
	buf.WriteByte(version3)
	buf.WriteByte(flags)
	buf.Write(binary.BigEndian.AppendUint64(nil, uint64(time.Now().UnixMilli())))
	buf.Write(binary.BigEndian.AppendUint64(nil, uint64(schemaID)))
	buf.Write(kinds)
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		return nil, fmt.Errorf("logcodec: encode batch: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("logcodec: encode batch: %w", err)
	}
	return buf.Bytes(), nil
}

// Decode reads a payload written by Encode. The returned batch does not
// reference payload (it is copied into mem), so payload may be reused.
// kinds is nil when the entry carries none. rows is the row count recorded in
// the log entry.
func Decode(payload []byte, rows int64, mem memory.Allocator) (arrow.RecordBatch, []byte, error) {
	flags, rest, err := header(payload)
	if err != nil {
		return nil, nil, err
	}
	if rows < 0 {
		return nil, nil, fmt.Errorf("%w: negative row count %d", ErrCorrupt, rows)
	}
	var kinds []byte
	if flags&flagKinds != 0 {
		if int64(len(rest)) < rows {
			return nil, nil, fmt.Errorf("%w: kinds truncated", ErrCorrupt)
		}
		kinds = append([]byte(nil), rest[:rows]...)
		rest = rest[rows:]
	}
	if err := ipccheck.CheckStream(rest); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	// No message body is longer than the payload: a damaged length must not
	// allocate what it claims (ipc.NewReader ignores the size limits, so the
	// message reader is made here).
	mr := ipc.NewMessageReader(bytes.NewReader(rest), ipc.WithAllocator(mem), ipc.WithBodySizeLimit(int64(len(rest))+1))
	defer mr.Release()
	r, err := ipc.NewReaderFromMessageReader(mr, ipc.WithAllocator(mem))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	defer r.Release()
	if !r.Next() {
		if err := r.Err(); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		return nil, nil, fmt.Errorf("%w: no record batch", ErrCorrupt)
	}
	rec := r.RecordBatch()
	if rec.NumRows() != rows {
		return nil, nil, fmt.Errorf("%w: batch has %d rows, entry says %d", ErrCorrupt, rec.NumRows(), rows)
	}
	// The IPC reader checks buffer sizes, not contents (see
	// arrowutil.ValidateRecord).
	if err := arrowutil.ValidateRecord(rec); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	rec.Retain()
	return rec, kinds, nil
}

func estimateSize(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		for _, b := range c.Data().Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
	}
	return n
}

// header checks the version and returns the flags and what follows the
// write time.
func header(payload []byte) (flags byte, rest []byte, err error) {
	if len(payload) < 2 {
		return 0, nil, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(payload))
	}
	switch payload[0] {
	case version1:
		return payload[1], payload[2:], nil
	case version2:
		if len(payload) < 10 {
			return 0, nil, fmt.Errorf("%w: header truncated", ErrCorrupt)
		}
		return payload[1], payload[10:], nil
	case version3:
		if len(payload) < 18 {
			return 0, nil, fmt.Errorf("%w: header truncated", ErrCorrupt)
		}
		return payload[1], payload[18:], nil
	}
	return 0, nil, fmt.Errorf("%w: unknown format version %d", ErrCorrupt, payload[0])
}

// WriteTime returns when the entry was encoded; ok is false for entries
// without a time (version 1) or bad bytes.
func WriteTime(payload []byte) (t time.Time, ok bool) {
	if len(payload) < 10 || (payload[0] != version2 && payload[0] != version3) {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(binary.BigEndian.Uint64(payload[2:10]))), true
}

// SchemaID returns the id of the table schema the entry's rows were written
// under; ok is false for entries without one (versions 1 and 2, written
// before the id was recorded: their Arrow schema, whose fields carry their
// Paimon field ids, is all there is) or bad bytes.
func SchemaID(payload []byte) (id int64, ok bool) {
	if len(payload) < 18 || payload[0] != version3 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(payload[10:18])), true
}
