package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Value encoding of one log entry (see doc.go for the layout):
//
//	entry value := version(1 byte = recordV1) | rows uvarint | payloadLen uvarint | payload
//	             | version(1 byte = recordV2) | rows uvarint | segment uvarint | offset uvarint
//	               | length uvarint | crc32c (4 bytes BE)
//
// A V2 value points into a segment file, which holds the entry's V1 record (length bytes
// at offset; crc32c, Castagnoli, of those bytes).
//
// and of a bucket's meta record:
//
//	meta value  := version(1 byte = metaV1) | logStart uvarint
//
// Decoders are strict: a wrong version, a short input or bytes left over are corruption.

const (
	recordV1 byte = 1
	recordV2 byte = 2
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

// appendPointer appends the V2 value of an entry of rows rows whose V1 record is at p.
func appendPointer(dst []byte, rows int64, p segPtr) []byte {
	dst = append(dst, recordV2)
	dst = binary.AppendUvarint(dst, uint64(rows))
	dst = binary.AppendUvarint(dst, p.seg)
	dst = binary.AppendUvarint(dst, p.off)
	dst = binary.AppendUvarint(dst, uint64(p.len))
	return binary.BigEndian.AppendUint32(dst, p.crc)
}

// decodeValue decodes an entry value of either version: a V1 value yields its payload
// (aliasing val), a V2 value the pointer to its record.
func decodeValue(key, val []byte) (rows int64, payload []byte, ptr *segPtr, err error) {
	if len(val) == 0 || val[0] != recordV2 {
		rows, payload, err = decodeRecord(key, val)
		return rows, payload, nil, err
	}
	d := decbuf{b: val[1:]}
	r := d.uvarint()
	p := segPtr{seg: d.uvarint(), off: d.uvarint()}
	n := d.uvarint()
	crc := d.bytes(4)
	if err := d.finish(); err != nil {
		return 0, nil, nil, corruptf(key, "decode pointer: %w", err)
	}
	if r < 1 || r > 1<<62 || n > 1<<31 || p.off > 1<<62 {
		return 0, nil, nil, corruptf(key, "decode pointer: rows %d, length %d, offset %d out of range", r, n, p.off)
	}
	p.len, p.crc = uint32(n), binary.BigEndian.Uint32(crc)
	return int64(r), nil, &p, nil
}

// decodeRecordRows decodes only the row count. Used where only the header is needed
// (recovery).
func decodeRecordRows(key, val []byte) (int64, error) {
	rows, _, _, err := decodeValue(key, val)
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
