package manifest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/RoaringBitmap/roaring/v2"
)

// Deletion vectors ('deletion-vectors.enabled' = 'true') and index manifests, as Java Paimon
// writes them:
//
//   - The snapshot's indexManifest names an Avro index manifest (_VERSION 1) that holds the
//     complete current set of index files. Entries of _INDEX_TYPE DELETION_VECTORS belong to a
//     (partition, bucket) and list, per data file, the range of its vector in the index file
//     (_DELETIONS_VECTORS_RANGES: f0 data file name, f1 offset, f2 length, _CARDINALITY).
//   - An index file starts with the version byte 1 (IndexFileVersion); at each offset a vector is
//     either the 32-bit BitmapDeletionVector (int32 BE size = 4 + bitmap bytes = the range length,
//     int32 BE magic 1581511376, a portable RoaringBitmap, int32 BE CRC32 of magic + bitmap) or
//     the 64-bit Bitmap64DeletionVector (int32 BE size = 4 + bitmap bytes, magic 1681511377
//     little-endian, the portable 64-bit Roaring format, int32 BE CRC32 of magic + bitmap; the
//     range length counts the size and CRC too).
//   - A vector holds the 0-based positions of deleted rows in its data file.

const (
	// DeletionVectorsIndexType is the _INDEX_TYPE of deletion-vector index files.
	DeletionVectorsIndexType = "DELETION_VECTORS"
	// IndexFileVersion is the first byte of a deletion-vector index file.
	IndexFileVersion     = 1
	dvMagic32            = 1581511376
	dvMagic64            = 1681511377
	indexManifestVersion = 1
)

// IndexEntry is one record of an index manifest.
type IndexEntry struct {
	Kind         int32
	Partition    []byte // serialized BinaryRow
	Bucket       int32
	IndexType    string
	FileName     string
	FileSize     int64
	RowCount     int64
	ExternalPath *string
	DVRanges     []DVRange // nil: none
}

// DVRange locates the deletion vector of one data file in an index file.
type DVRange struct {
	DataFile    string
	Offset      int64
	Length      int64
	Cardinality *int64
}

// DecodeIndexManifest decodes an index manifest. An error matches ErrCorrupt.
func DecodeIndexManifest(data []byte) ([]IndexEntry, error) {
	out, err := decodeIndexManifest(data)
	if err != nil {
		return nil, corrupt(err)
	}
	return out, nil
}

func decodeIndexManifest(data []byte) ([]IndexEntry, error) {
	recs, err := decodeAvroRecords(data)
	if err != nil {
		return nil, err
	}
	out := make([]IndexEntry, 0, len(recs))
	for i, m := range recs {
		r := &recReader{m: m}
		if _, ok := m["_VERSION"]; ok {
			if v := r.int64("_VERSION"); v != indexManifestVersion {
				return nil, fmt.Errorf("record %d: unsupported index manifest _VERSION %d", i, v)
			}
		}
		e := IndexEntry{Kind: int32(r.int64("_KIND")), Partition: r.bytes("_PARTITION"), Bucket: int32(r.int64("_BUCKET")),
			IndexType: r.str("_INDEX_TYPE"), FileName: r.str("_FILE_NAME"), FileSize: r.int64("_FILE_SIZE"),
			RowCount: r.int64("_ROW_COUNT"), ExternalPath: r.optStr("_EXTERNAL_PATH")}
		if arr, ok := r.get("_DELETIONS_VECTORS_RANGES").([]any); ok {
			e.DVRanges = make([]DVRange, 0, len(arr))
			for _, x := range arr {
				rm, ok := asRecord(x)
				if !ok {
					if unwrapUnion(x) == nil {
						continue
					}
					return nil, fmt.Errorf("record %d: _DELETIONS_VECTORS_RANGES holds %T", i, x)
				}
				rr := &recReader{m: rm}
				d := DVRange{DataFile: rr.str("f0"), Offset: rr.int64("f1"), Length: rr.int64("f2"), Cardinality: rr.optInt64("_CARDINALITY")}
				if rr.err != nil {
					return nil, fmt.Errorf("record %d: %w", i, rr.err)
				}
				e.DVRanges = append(e.DVRanges, d)
			}
		}
		if r.err != nil {
			return nil, fmt.Errorf("record %d: %w", i, r.err)
		}
		out = append(out, e)
	}
	return out, nil
}

// IndexFileNames returns the _FILE_NAME of every record of an index manifest (ADD or DELETE),
// reading no other field. An error matches ErrCorrupt.
func IndexFileNames(data []byte) ([]string, error) {
	recs, err := decodeAvroRecords(data)
	if err != nil {
		return nil, corrupt(err)
	}
	var out []string
	for _, m := range recs {
		r := &recReader{m: m}
		n := r.str("_FILE_NAME")
		if r.err != nil {
			return nil, corrupt(r.err)
		}
		out = append(out, n)
	}
	return out, nil
}

// DeletionVector is the set of deleted row positions of one data file.
type DeletionVector struct {
	parts []dvPart // by key ascending; one part (key 0) for the 32-bit form
	card  uint64
}

// Cardinality returns how many positions the vector deletes.
func (dv *DeletionVector) Cardinality() uint64 { return dv.card }

type dvPart struct {
	key uint32 // high 32 bits of the positions
	bm  *roaring.Bitmap
}

// Contains reports whether row position pos is deleted.
func (dv *DeletionVector) Contains(pos int64) bool {
	if pos < 0 {
		return false
	}
	k := uint32(uint64(pos) >> 32)
	for i := range dv.parts {
		if dv.parts[i].key == k {
			return dv.parts[i].bm.Contains(uint32(pos))
		}
	}
	return false
}

// CountIn returns how many positions in [from, to) are deleted.
func (dv *DeletionVector) CountIn(from, to int64) uint64 {
	var n uint64
	for pos := from; pos < to; {
		k := uint32(uint64(pos) >> 32)
		end := min(to, int64(k+1)<<32)
		for i := range dv.parts {
			if dv.parts[i].key == k {
				bm := dv.parts[i].bm
				lo, hi := uint32(pos), uint32(end-1)
				n += bm.Rank(hi)
				if lo > 0 {
					n -= bm.Rank(lo - 1)
				}
			}
		}
		pos = end
	}
	return n
}

// MaxPosition returns the largest deleted position, -1 when none.
func (dv *DeletionVector) MaxPosition() int64 {
	for i := len(dv.parts) - 1; i >= 0; i-- {
		if !dv.parts[i].bm.IsEmpty() {
			return int64(dv.parts[i].key)<<32 | int64(dv.parts[i].bm.Maximum())
		}
	}
	return -1
}

// ParseDeletionVector decodes the vector at the start of b (the bytes of its range: size, magic,
// bitmap, CRC). length is the range length from the index manifest.
// An error matches ErrCorrupt.
func ParseDeletionVector(b []byte, length int64) (*DeletionVector, error) {
	dv, err := parseDeletionVector(b, length)
	if err != nil {
		return nil, corrupt(err)
	}
	return dv, nil
}

func parseDeletionVector(b []byte, length int64) (*DeletionVector, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("deletion vector truncated: %d bytes", len(b))
	}
	size := int64(int32(binary.BigEndian.Uint32(b[0:4])))
	magicBE := binary.BigEndian.Uint32(b[4:8])
	magicLE := binary.LittleEndian.Uint32(b[4:8])
	switch {
	case magicBE == dvMagic32:
		if size != length {
			return nil, fmt.Errorf("deletion vector size %d does not match its range length %d", size, length)
		}
		if size < 4 || int64(len(b)) < 4+size+4 {
			return nil, fmt.Errorf("deletion vector of size %d truncated (%d bytes)", size, len(b))
		}
		data := b[4 : 4+size]
		if err := checkDVChecksum(data, b[4+size:8+size]); err != nil {
			return nil, err
		}
		bm := roaring.New()
		n, err := bm.ReadFrom(bytes.NewReader(data[4:]))
		if err != nil {
			return nil, fmt.Errorf("32-bit roaring bitmap: %w", err)
		}
		if n != int64(len(data)-4) {
			return nil, fmt.Errorf("32-bit roaring bitmap has %d bytes, its vector %d", n, len(data)-4)
		}
		if bm.GetCardinality() > 0 && bm.Maximum() > 1<<31-1 {
			return nil, fmt.Errorf("32-bit deletion vector holds position %d beyond 2^31-1", bm.Maximum())
		}
		return &DeletionVector{parts: []dvPart{{key: 0, bm: bm}}, card: bm.GetCardinality()}, nil
	case magicLE == dvMagic64:
		if size != length-8 {
			return nil, fmt.Errorf("64-bit deletion vector size %d does not match its range length %d", size, length)
		}
		if size < 4 || int64(len(b)) < 4+size+4 {
			return nil, fmt.Errorf("64-bit deletion vector of size %d truncated (%d bytes)", size, len(b))
		}
		data := b[4 : 4+size]
		if err := checkDVChecksum(data, b[4+size:8+size]); err != nil {
			return nil, err
		}
		return parseRoaring64(data[4:])
	}
	return nil, fmt.Errorf("invalid deletion vector magic number %d (32-bit %d, 64-bit %d little-endian)",
		int32(magicBE), dvMagic32, dvMagic64)
}

func checkDVChecksum(data, sum []byte) error {
	want := binary.BigEndian.Uint32(sum)
	if got := crc32.ChecksumIEEE(data); got != want {
		return fmt.Errorf("deletion vector checksum mismatch: stored %08x, computed %08x", want, got)
	}
	return nil
}

// parseRoaring64 reads the portable 64-bit Roaring format (little-endian): the number of 32-bit
// bitmaps as 8 bytes, then per bitmap its key (the high 32 bits) as 4 bytes and a portable 32-bit
// RoaringBitmap, keys ascending.
func parseRoaring64(b []byte) (*DeletionVector, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("64-bit roaring bitmap truncated")
	}
	count := binary.LittleEndian.Uint64(b[:8])
	rd := bytes.NewReader(b[8:])
	if count > uint64(len(b)) {
		return nil, fmt.Errorf("64-bit roaring bitmap claims %d bitmaps in %d bytes", count, len(b))
	}
	dv := &DeletionVector{}
	last := int64(-1)
	for i := uint64(0); i < count; i++ {
		var kb [4]byte
		if _, err := io.ReadFull(rd, kb[:]); err != nil {
			return nil, fmt.Errorf("64-bit roaring bitmap: key %d: %w", i, err)
		}
		key := binary.LittleEndian.Uint32(kb[:])
		if int64(key) <= last {
			return nil, fmt.Errorf("64-bit roaring bitmap: keys not ascending (%d after %d)", key, last)
		}
		last = int64(key)
		bm := roaring.New()
		if _, err := bm.ReadFrom(rd); err != nil {
			return nil, fmt.Errorf("64-bit roaring bitmap: bitmap %d: %w", i, err)
		}
		dv.parts = append(dv.parts, dvPart{key: key, bm: bm})
		dv.card += bm.GetCardinality()
	}
	if rd.Len() != 0 {
		return nil, fmt.Errorf("64-bit roaring bitmap: %d trailing bytes", rd.Len())
	}
	return dv, nil
}
