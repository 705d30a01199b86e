package logstore

import (
	"encoding/binary"
	"errors"
)

// Badger key layout (see doc.go):
//
//	format key := 0x00 "logstore.format"
//	entry key  := 0x01 | uvarint(len(table)) | table | uint32 BE bucket | uint64 BE base offset
//	meta key   := 0x02 | uvarint(len(table)) | table | uint32 BE bucket
//	segment key := 0x03 | uint64 BE segment id | uvarint(len(table)) | table | uint32 BE bucket
//
// Keys of one bucket share the prefix up to and including the bucket, and sort by base
// offset. The length prefix keeps one table's key range from containing another's.

const (
	prefixFormat  byte = 0x00
	prefixEntry   byte = 0x01
	prefixMeta    byte = 0x02
	prefixSegment byte = 0x03

	// formatVersion 2 added segment files and V2 entry values; a format 1 store is
	// upgraded in place on open (its V1 values stay readable).
	formatVersion byte = 2
)

var formatKey = []byte("\x00logstore.format")

func appendTablePrefix(dst []byte, kind byte, table string) []byte {
	return appendTable(append(dst, kind), table)
}

func appendBucketPrefix(dst []byte, kind byte, b Bucket) []byte {
	return appendBucket(append(dst, kind), b)
}

// appendTable appends uvarint(len(table)) | table.
func appendTable(dst []byte, table string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(table)))
	return append(dst, table...)
}

// appendBucket appends uvarint(len(table)) | table | uint32 BE bucket.
func appendBucket(dst []byte, b Bucket) []byte {
	return binary.BigEndian.AppendUint32(appendTable(dst, b.Table), uint32(b.Bucket))
}

// cutBucket parses what appendBucket wrote at the start of k and returns the rest.
func cutBucket(k []byte) (Bucket, []byte, error) {
	n, w := binary.Uvarint(k)
	if w <= 0 || uint64(len(k)-w) < n {
		return Bucket{}, nil, errBadKey
	}
	k = k[w:]
	table := string(k[:n])
	k = k[n:]
	if len(k) < 4 {
		return Bucket{}, nil, errBadKey
	}
	return Bucket{Table: table, Bucket: int32(binary.BigEndian.Uint32(k))}, k[4:], nil
}

// entryKey returns the key of the entry of bucket b at base offset base.
func entryKey(dst []byte, b Bucket, base int64) []byte {
	dst = appendBucketPrefix(dst, prefixEntry, b)
	return binary.BigEndian.AppendUint64(dst, uint64(base))
}

// bucketEnd returns a key greater than every entry key of the bucket whose prefix is p
// and smaller than the keys of the next bucket.
func bucketEnd(p []byte) []byte {
	k := append(append([]byte(nil), p...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	return k
}

var errBadKey = errors.New("malformed key")

// parseKey splits an entry or meta key. For a meta key base is 0.
func parseKey(k []byte) (kind byte, b Bucket, base int64, err error) {
	if len(k) < 1 {
		return 0, Bucket{}, 0, errBadKey
	}
	kind = k[0]
	b, rest, err := cutBucket(k[1:])
	if err != nil {
		return 0, Bucket{}, 0, err
	}
	switch kind {
	case prefixEntry:
		if len(rest) != 8 {
			return 0, Bucket{}, 0, errBadKey
		}
		u := binary.BigEndian.Uint64(rest)
		if u > 1<<62 {
			return 0, Bucket{}, 0, errBadKey
		}
		base = int64(u)
	case prefixMeta:
		if len(rest) != 0 {
			return 0, Bucket{}, 0, errBadKey
		}
	default:
		return 0, Bucket{}, 0, errBadKey
	}
	return kind, b, base, nil
}
