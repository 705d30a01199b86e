package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/flightd/flightd/lake/manifest"
)

// Deletion vectors ('deletion-vectors.enabled' = 'true') are read as Java Paimon reads them;
// package manifest decodes index manifests and vectors and describes their bytes.
//
//   - An index file is index/<name> (the bucket directory with 'index-file-in-data-file-dir',
//     _EXTERNAL_PATH when set).
//   - Batch reads of a primary-key table skip level-0 files (DataTableBatchScan with
//     batchScanSkipLevel0 and batch-scan-mode none), and a bucket whose files all have no
//     delete rows (_DELETE_ROW_COUNT 0 or null) is read raw, without merging
//     (MergeTreeSplitGenerator); other buckets are merged with the vectors applied per file.
//   - Append tables apply the vectors to their (level-0) files.

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

// readIndexManifest reads an index manifest and merges its entries (a DELETE cancels the ADD of the
// same index file), keeping ADDs in file order.
func (t *Table) readIndexManifest(ctx context.Context, name string) ([]manifest.IndexEntry, error) {
	p := t.manifestPath(name)
	data, err := t.fio.Read(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: read index manifest %s: %w", t.FullName(), p, err)
	}
	entries, err := manifest.DecodeIndexManifest(data)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: decode index manifest %s: %w", t.FullName(), p, err)
	}
	type key struct {
		part   string
		bucket int32
		name   string
	}
	live := map[key]int{}
	var out []manifest.IndexEntry
	for _, e := range entries {
		k := key{string(e.Partition), e.Bucket, e.FileName}
		switch e.Kind {
		case manifest.FileKindAdd:
			live[k] = len(out)
			out = append(out, e)
		case manifest.FileKindDelete:
			if i, ok := live[k]; ok {
				out[i].Kind = -1
				delete(live, k)
			}
		default:
			return nil, fmt.Errorf("lake: %s: index manifest %s: %w: unknown file kind %d", t.FullName(), p, manifest.ErrCorrupt, e.Kind)
		}
	}
	res := out[:0]
	for _, e := range out {
		if e.Kind == manifest.FileKindAdd {
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
		if e.IndexType != manifest.DeletionVectorsIndexType {
			continue
		}
		k := key{string(e.Partition), e.Bucket}
		m := byBucket[k]
		if m == nil {
			m = map[string]deletionFile{}
			byBucket[k] = m
		}
		path, err := r.indexFilePath(e)
		if err != nil {
			return fmt.Errorf("lake: %s: index file %s: %w", t.FullName(), e.FileName, err)
		}
		for _, d := range e.DVRanges {
			m[d.DataFile] = deletionFile{path: path, fileSize: e.FileSize, offset: d.Offset, length: d.Length, cardinality: d.Cardinality}
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
func (r *scanReader) indexFilePath(e *manifest.IndexEntry) (string, error) {
	if e.ExternalPath != nil && *e.ExternalPath != "" {
		return *e.ExternalPath, nil
	}
	if strings.EqualFold(strings.TrimSpace(r.t.schema.Options["index-file-in-data-file-dir"]), "true") {
		return r.filePath(&scanGroup{partition: e.Partition, bucket: e.Bucket}, &manifest.DataFileMeta{FileName: e.FileName})
	}
	return filepath.Join(r.t.path, "index", e.FileName), nil
}

// loadDeletionVectors reads the deletion vectors of a group's files, one open per index file.
func (r *scanReader) loadDeletionVectors(g *scanGroup) (map[string]*manifest.DeletionVector, error) {
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
	out := map[string]*manifest.DeletionVector{}
	for _, path := range order {
		if err := r.readIndexFile(path, byIndex[path], g.deletions, rows, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (r *scanReader) readIndexFile(path string, files []string, dels map[string]deletionFile, rows map[string]int64,
	out map[string]*manifest.DeletionVector) error {
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
	if ver[0] != manifest.IndexFileVersion {
		return fmt.Errorf("lake: %s: deletion vector index file %s: %w: version %d, want %d", t.FullName(), path, manifest.ErrCorrupt, ver[0], manifest.IndexFileVersion)
	}
	for _, name := range files {
		d := dels[name]
		bad := func(err error) error {
			if !errors.Is(err, manifest.ErrCorrupt) {
				err = fmt.Errorf("%w: %w", manifest.ErrCorrupt, err)
			}
			return fmt.Errorf("lake: %s: deletion vector of data file %s in %s at offset %d: %w", t.FullName(), name, path, d.offset, err)
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
		dv, err := manifest.ParseDeletionVector(buf[:n], d.length)
		if err != nil {
			return bad(err)
		}
		if d.cardinality != nil && uint64(*d.cardinality) != dv.Cardinality() {
			return bad(fmt.Errorf("holds %d positions, the index manifest says %d", dv.Cardinality(), *d.cardinality))
		}
		if maxPos := dv.MaxPosition(); maxPos >= rows[name] {
			return bad(fmt.Errorf("deletes row %d of a file with %d rows", maxPos, rows[name]))
		}
		out[name] = dv
	}
	return nil
}
