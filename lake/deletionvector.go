package lake

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
)

// Deletion vectors ('deletion-vectors.enabled' = 'true'), as Java Paimon reads them:
//
//   - The snapshot's indexManifest names an Avro index manifest (_VERSION 1) that holds the
//     complete current set of index files. Entries of _INDEX_TYPE DELETION_VECTORS belong to a
//     (partition, bucket) and list, per data file, the range of its vector in the index file
//     (_DELETIONS_VECTORS_RANGES: f0 data file name, f1 offset, f2 length, _CARDINALITY).
//   - An index file is index/<name> (the bucket directory with 'index-file-in-data-file-dir',
//     _EXTERNAL_PATH when set). It starts with the version byte 1; at each offset a vector is
//     either the 32-bit BitmapDeletionVector (int32 BE size = 4 + bitmap bytes = the range length,
//     int32 BE magic 1581511376, a portable RoaringBitmap, int32 BE CRC32 of magic + bitmap) or
//     the 64-bit Bitmap64DeletionVector (int32 BE size = 4 + bitmap bytes, magic 1681511377
//     little-endian, the portable 64-bit Roaring format, int32 BE CRC32 of magic + bitmap; the
//     range length counts the size and CRC too).
//   - A vector holds the 0-based positions of deleted rows in its data file; readers skip them.
//   - Batch reads of a primary-key table skip level-0 files (DataTableBatchScan with
//     batchScanSkipLevel0 and batch-scan-mode none), and a bucket whose files all have no
//     delete rows (_DELETE_ROW_COUNT 0 or null) is read raw, without merging
//     (MergeTreeSplitGenerator); other buckets are merged with the vectors applied per file.
//   - Append tables apply the vectors to their (level-0) files.

const (
	deletionVectorsIndexType = "DELETION_VECTORS"
	dvIndexVersion           = 1
	dvMagic32                = 1581511376
	dvMagic64                = 1681511377
	indexManifestVersion     = 1
)

// DeletionVectorsEnabled reports whether a table's options turn deletion vectors on.
func DeletionVectorsEnabled(opts map[string]string) bool {
	return strings.EqualFold(strings.TrimSpace(opts["deletion-vectors.enabled"]), "true")
}

// deletionFile locates the deletion vector of one data file.
type deletionFile struct {
	path        string // index file (FileIO path)
	fileSize    int64  // of the index file, from the index manifest
	offset      int64
	length      int64
	cardinality *int64
}

// indexEntry is one record of an index manifest.
type indexEntry struct {
	kind         int32
	partition    []byte
	bucket       int32
	indexType    string
	fileName     string
	fileSize     int64
	rowCount     int64
	externalPath *string
	dvRanges     []dvRange // nil: none
}

type dvRange struct {
	dataFile    string
	offset      int64
	length      int64
	cardinality *int64
}

func decodeIndexManifest(data []byte) ([]indexEntry, error) {
	recs, err := decodeAvroRecords(data)
	if err != nil {
		return nil, err
	}
	out := make([]indexEntry, 0, len(recs))
	for i, m := range recs {
		r := &recReader{m: m}
		if _, ok := m["_VERSION"]; ok {
			if v := r.int64("_VERSION"); v != indexManifestVersion {
				return nil, fmt.Errorf("record %d: unsupported index manifest _VERSION %d", i, v)
			}
		}
		e := indexEntry{kind: int32(r.int64("_KIND")), partition: r.bytes("_PARTITION"), bucket: int32(r.int64("_BUCKET")),
			indexType: r.str("_INDEX_TYPE"), fileName: r.str("_FILE_NAME"), fileSize: r.int64("_FILE_SIZE"),
			rowCount: r.int64("_ROW_COUNT"), externalPath: r.optStr("_EXTERNAL_PATH")}
		if arr, ok := r.get("_DELETIONS_VECTORS_RANGES").([]any); ok {
			e.dvRanges = make([]dvRange, 0, len(arr))
			for _, x := range arr {
				rm, ok := asRecord(x)
				if !ok {
					if unwrapUnion(x) == nil {
						continue
					}
					return nil, fmt.Errorf("record %d: _DELETIONS_VECTORS_RANGES holds %T", i, x)
				}
				rr := &recReader{m: rm}
				d := dvRange{dataFile: rr.str("f0"), offset: rr.int64("f1"), length: rr.int64("f2"), cardinality: rr.optInt64("_CARDINALITY")}
				if rr.err != nil {
					return nil, fmt.Errorf("record %d: %w", i, rr.err)
				}
				e.dvRanges = append(e.dvRanges, d)
			}
		}
		if r.err != nil {
			return nil, fmt.Errorf("record %d: %w", i, r.err)
		}
		out = append(out, e)
	}
	return out, nil
}

// readIndexManifest reads an index manifest and merges its entries (a DELETE cancels the ADD of the
// same index file), keeping ADDs in file order.
func (t *Table) readIndexManifest(ctx context.Context, name string) ([]indexEntry, error) {
	p := t.manifestPath(name)
	data, err := t.fio.Read(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: read index manifest %s: %w", t.FullName(), p, err)
	}
	entries, err := decodeIndexManifest(data)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: decode index manifest %s: %w: %w", t.FullName(), p, ErrCorrupt, err)
	}
	type key struct {
		part   string
		bucket int32
		name   string
	}
	live := map[key]int{}
	var out []indexEntry
	for _, e := range entries {
		k := key{string(e.partition), e.bucket, e.fileName}
		switch e.kind {
		case FileKindAdd:
			live[k] = len(out)
			out = append(out, e)
		case FileKindDelete:
			if i, ok := live[k]; ok {
				out[i].kind = -1
				delete(live, k)
			}
		default:
			return nil, fmt.Errorf("lake: %s: index manifest %s: %w: unknown file kind %d", t.FullName(), p, ErrCorrupt, e.kind)
		}
	}
	res := out[:0]
	for _, e := range out {
		if e.kind == FileKindAdd {
			res = append(res, e)
		}
	}
	return res, nil
}

// skipLevel0 reports whether batch reads ignore level-0 files, as Java's DataTableBatchScan: a
// primary-key table with deletion vectors (or the first-row engine, which flightd refuses) and
// batch-scan-mode none.
func (t *Table) skipLevel0() bool {
	opts := t.schema.Options
	if !t.schema.HasPrimaryKey() || !DeletionVectorsEnabled(opts) {
		return false
	}
	m := strings.TrimSpace(opts["batch-scan-mode"])
	return m == "" || strings.EqualFold(m, "none")
}

// attachDeletionVectors prepares the planned groups of a deletion-vector table: level-0 files of
// primary-key tables are dropped (Java's batch scan does not see them), and each group gets the
// deletion vectors of its files from the snapshot's index manifest. Other tables are left alone.
func (r *scanReader) attachDeletionVectors(snap *Snapshot) error {
	t := r.t
	if snap == nil || !DeletionVectorsEnabled(t.schema.Options) {
		return nil
	}
	if t.skipLevel0() {
		groups := r.groups[:0]
		for _, g := range r.groups {
			files := g.files[:0]
			for _, f := range g.files {
				if f.Level != 0 {
					files = append(files, f)
				}
			}
			g.files = files
			if len(files) > 0 {
				groups = append(groups, g)
			}
		}
		r.groups = groups
	}
	r.dvEnabled = true
	if snap.IndexManifest == nil || *snap.IndexManifest == "" || len(r.groups) == 0 {
		return nil
	}
	entries, err := t.readIndexManifest(r.ctx, *snap.IndexManifest)
	if err != nil {
		return err
	}
	type key struct {
		part   string
		bucket int32
	}
	byBucket := map[key]map[string]deletionFile{}
	for i := range entries {
		e := &entries[i]
		if e.indexType != deletionVectorsIndexType {
			continue
		}
		k := key{string(e.partition), e.bucket}
		m := byBucket[k]
		if m == nil {
			m = map[string]deletionFile{}
			byBucket[k] = m
		}
		path, err := r.indexFilePath(e)
		if err != nil {
			return fmt.Errorf("lake: %s: index file %s: %w", t.FullName(), e.fileName, err)
		}
		for _, d := range e.dvRanges {
			m[d.dataFile] = deletionFile{path: path, fileSize: e.fileSize, offset: d.offset, length: d.length, cardinality: d.cardinality}
		}
	}
	for _, g := range r.groups {
		m := byBucket[key{string(g.partition), g.bucket}]
		for _, f := range g.files {
			if d, ok := m[f.FileName]; ok {
				if g.deletions == nil {
					g.deletions = map[string]deletionFile{}
				}
				g.deletions[f.FileName] = d
			}
		}
	}
	return nil
}

// indexFilePath is where an index file lives: its external path, the bucket directory with
// 'index-file-in-data-file-dir', else <table>/index/.
func (r *scanReader) indexFilePath(e *indexEntry) (string, error) {
	if e.externalPath != nil && *e.externalPath != "" {
		return *e.externalPath, nil
	}
	if strings.EqualFold(strings.TrimSpace(r.t.schema.Options["index-file-in-data-file-dir"]), "true") {
		return r.filePath(&scanGroup{partition: e.partition, bucket: e.bucket}, &DataFileMeta{FileName: e.fileName})
	}
	return filepath.Join(r.t.path, "index", e.fileName), nil
}

// deletionVector is the set of deleted row positions of one data file.
type deletionVector struct {
	parts []dvPart // by key ascending; one part (key 0) for the 32-bit form
	card  uint64
}

type dvPart struct {
	key uint32 // high 32 bits of the positions
	bm  *roaring.Bitmap
}

// contains reports whether row position pos is deleted.
func (dv *deletionVector) contains(pos int64) bool {
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

// countIn returns how many positions in [from, to) are deleted.
func (dv *deletionVector) countIn(from, to int64) uint64 {
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

// maxPosition returns the largest deleted position, -1 when none.
func (dv *deletionVector) maxPosition() int64 {
	for i := len(dv.parts) - 1; i >= 0; i-- {
		if !dv.parts[i].bm.IsEmpty() {
			return int64(dv.parts[i].key)<<32 | int64(dv.parts[i].bm.Maximum())
		}
	}
	return -1
}

// parseDeletionVector decodes the vector at the start of b (the bytes of its range: size, magic,
// bitmap, CRC). length is the range length from the index manifest.
func parseDeletionVector(b []byte, length int64) (*deletionVector, error) {
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
		return &deletionVector{parts: []dvPart{{key: 0, bm: bm}}, card: bm.GetCardinality()}, nil
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
func parseRoaring64(b []byte) (*deletionVector, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("64-bit roaring bitmap truncated")
	}
	count := binary.LittleEndian.Uint64(b[:8])
	rd := bytes.NewReader(b[8:])
	if count > uint64(len(b)) {
		return nil, fmt.Errorf("64-bit roaring bitmap claims %d bitmaps in %d bytes", count, len(b))
	}
	dv := &deletionVector{}
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

// loadDeletionVectors reads the deletion vectors of a group's files, one open per index file.
func (r *scanReader) loadDeletionVectors(g *scanGroup) (map[string]*deletionVector, error) {
	if len(g.deletions) == 0 {
		return nil, nil
	}
	byIndex := map[string][]string{}
	var order []string
	for i := range g.files {
		name := g.files[i].FileName
		d, ok := g.deletions[name]
		if !ok {
			continue
		}
		if _, seen := byIndex[d.path]; !seen {
			order = append(order, d.path)
		}
		byIndex[d.path] = append(byIndex[d.path], name)
	}
	rows := map[string]int64{}
	for i := range g.files {
		rows[g.files[i].FileName] = g.files[i].RowCount
	}
	out := map[string]*deletionVector{}
	for _, path := range order {
		if err := r.readIndexFile(path, byIndex[path], g.deletions, rows, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (r *scanReader) readIndexFile(path string, files []string, dels map[string]deletionFile, rows map[string]int64,
	out map[string]*deletionVector) error {
	t := r.t
	f, err := t.fio.Open(r.ctx, path)
	if err != nil {
		return fmt.Errorf("lake: %s: open deletion vector index file %s: %w", t.FullName(), path, err)
	}
	defer f.Close()
	var ver [1]byte
	if _, err := f.ReadAt(ver[:], 0); err != nil {
		return fmt.Errorf("lake: %s: read deletion vector index file %s: %w", t.FullName(), path, err)
	}
	if ver[0] != dvIndexVersion {
		return fmt.Errorf("lake: %s: deletion vector index file %s: %w: version %d, want %d", t.FullName(), path, ErrCorrupt, ver[0], dvIndexVersion)
	}
	for _, name := range files {
		d := dels[name]
		bad := func(err error) error {
			return fmt.Errorf("lake: %s: deletion vector of data file %s in %s at offset %d: %w: %w", t.FullName(), name, path, d.offset, ErrCorrupt, err)
		}
		if d.offset < 1 || d.length < 4 || d.offset+d.length > d.fileSize {
			return bad(fmt.Errorf("range offset %d length %d outside the index file's %d bytes", d.offset, d.length, d.fileSize))
		}
		// The 32-bit form spans 4 + length + 4 bytes, the 64-bit form length bytes.
		buf := make([]byte, d.length+8)
		n, err := f.ReadAt(buf, d.offset)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("lake: %s: read deletion vector index file %s: %w", t.FullName(), path, err)
		}
		dv, err := parseDeletionVector(buf[:n], d.length)
		if err != nil {
			return bad(err)
		}
		if d.cardinality != nil && uint64(*d.cardinality) != dv.card {
			return bad(fmt.Errorf("holds %d positions, the index manifest says %d", dv.card, *d.cardinality))
		}
		if maxPos := dv.maxPosition(); maxPos >= rows[name] {
			return bad(fmt.Errorf("deletes row %d of a file with %d rows", maxPos, rows[name]))
		}
		out[name] = dv
	}
	return nil
}
