package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Value encoding of one log entry (see doc.go for the layout):
//
//	entry value := version(1 byte = recordV1) | rows uvarint | payloadLen uvarint | payload
//
// and of a bucket's meta record:
//
//	meta value  := version(1 byte = metaV1) | logStart uvarint
//
// Decoders are strict: a wrong version, a short input or bytes left over are corruption.

const (
	recordV1 byte = 1
	metaV1   byte = 1
)

var (
	errShort    = errors.New("short input")
	errLeftover = errors.New("bytes left over")
)

// appendRecord appends the encoded value of an entry to dst.
func appendRecord(dst []byte, rows int64, payload []byte) []byte {
	dst = append(dst, recordV1)
	dst = binary.AppendUvarint(dst, uint64(rows))
	dst = binary.AppendUvarint(dst, uint64(len(payload)))
	return append(dst, payload...)
}

// decbuf is a sticky-error decoder over a byte slice.
type decbuf struct {
	b   []byte
	err error
}

func (d *decbuf) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 1 {
		d.err = errShort
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decbuf) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		if n == 0 {
			d.err = errShort
		} else {
			d.err = errors.New("uvarint overflow")
		}
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decbuf) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if uint64(len(d.b)) < n {
		d.err = errShort
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}

func (d *decbuf) finish() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d", errLeftover, len(d.b))
	}
	return d.err
}

// decodeRecord decodes an entry value. The returned payload aliases val. key is only
// used to name the record in a corruption error.
func decodeRecord(key, val []byte) (rows int64, payload []byte, err error) {
	d := decbuf{b: val}
	if v := d.byte(); d.err == nil && v != recordV1 {
		return 0, nil, corruptf(key, "unknown record version %d", v)
	}
	r := d.uvarint()
	n := d.uvarint()
	payload = d.bytes(n)
	if err := d.finish(); err != nil {
		return 0, nil, corruptf(key, "decode record: %w", err)
	}
	if r < 1 || r > 1<<62 {
		return 0, nil, corruptf(key, "decode record: row count %d out of range", r)
	}
	return int64(r), payload, nil
}

// decodeRecordRows decodes only the row count, skipping the payload check. Used where
// only the header is needed (recovery).
func decodeRecordRows(key, val []byte) (int64, error) {
	rows, _, err := decodeRecord(key, val)
	return rows, err
}

func appendMeta(dst []byte, logStart int64) []byte {
	dst = append(dst, metaV1)
	return binary.AppendUvarint(dst, uint64(logStart))
}

func decodeMeta(key, val []byte) (logStart int64, err error) {
	d := decbuf{b: val}
	if v := d.byte(); d.err == nil && v != metaV1 {
		return 0, corruptf(key, "unknown meta version %d", v)
	}
	s := d.uvarint()
	if err := d.finish(); err != nil {
		return 0, corruptf(key, "decode meta: %w", err)
	}
	if s > 1<<62 {
		return 0, corruptf(key, "decode meta: log start %d out of range", s)
	}
	return int64(s), nil
}
