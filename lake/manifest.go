package lake

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/flightd/flightd/lake/manifest"
)

func (t *Table) manifestPath(name string) string { return filepath.Join(t.path, "manifest", name) }

func (t *Table) readManifestList(ctx context.Context, name string) ([]manifest.FileMeta, error) {
	p := t.manifestPath(name)
	if c, ok := decodedManifests.get(p); ok && c.metas != nil {
		return append([]manifest.FileMeta(nil), c.metas...), nil
	}
	data, err := t.fio.Read(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: read manifest list %s: %w", t.FullName(), p, err)
	}
	metas, err := manifest.DecodeList(data)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: decode manifest list %s: %w", t.FullName(), p, err)
	}
	// An empty list is cached too (as an empty, non-nil slice): offset-only
	// commits have one, and every scan would parse its Avro header again.
	decodedManifests.put(p, emptyCost+metasSize(metas), &cachedManifest{metas: append(make([]manifest.FileMeta, 0, len(metas)), metas...)})
	return metas, nil
}

func (t *Table) readManifest(ctx context.Context, name string) ([]manifest.Entry, error) {
	p := t.manifestPath(name)
	if c, ok := decodedManifests.get(p); ok && c.entries != nil {
		return append([]manifest.Entry(nil), c.entries...), nil
	}
	data, err := t.fio.Read(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: read manifest %s: %w", t.FullName(), p, err)
	}
	entries, err := manifest.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: decode manifest %s: %w", t.FullName(), p, err)
	}
	decodedManifests.put(p, emptyCost+entriesSize(entries), &cachedManifest{entries: append(make([]manifest.Entry, 0, len(entries)), entries...)})
	return entries, nil
}

// fileIdentity identifies a data file for ADD/DELETE merging.
type fileIdentity struct {
	partition string
	bucket    int32
	level     int32
	name      string
	extra     string
	external  string
}

func identityOf(e *manifest.Entry) fileIdentity {
	id := fileIdentity{partition: string(e.Partition), bucket: e.Bucket, level: e.File.Level, name: e.File.FileName,
		extra: strings.Join(e.File.ExtraFiles, "\x00")}
	if e.File.ExternalPath != nil {
		id.external = *e.File.ExternalPath
	}
	return id
}

// dataFiles returns the live ADD entries of a snapshot: mergeEntries(base ∪ delta), in manifest order.
func (t *Table) dataFiles(ctx context.Context, snap *Snapshot) ([]manifest.Entry, []manifest.FileMeta, error) {
	if snap == nil {
		return nil, nil, nil
	}
	var metas []manifest.FileMeta
	for _, list := range []string{snap.BaseManifestList, snap.DeltaManifestList} {
		if list == "" {
			continue
		}
		m, err := t.readManifestList(ctx, list)
		if err != nil {
			return nil, nil, err
		}
		metas = append(metas, m...)
	}
	live := map[fileIdentity]int{}
	var entries []manifest.Entry
	for _, mf := range metas {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		es, err := t.readManifest(ctx, mf.FileName)
		if err != nil {
			return nil, nil, err
		}
		for i := range es {
			id := identityOf(&es[i])
			switch es[i].Kind {
			case manifest.FileKindAdd:
				live[id] = len(entries)
				entries = append(entries, es[i])
			case manifest.FileKindDelete:
				if idx, ok := live[id]; ok {
					entries[idx].Kind = -1 // tombstone
					delete(live, id)
				}
			default:
				return nil, nil, fmt.Errorf("lake: %s: manifest %s: %w: unknown file kind %d", t.FullName(), mf.FileName, manifest.ErrCorrupt, es[i].Kind)
			}
		}
	}
	out := entries[:0]
	for _, e := range entries {
		if e.Kind == manifest.FileKindAdd {
			out = append(out, e)
		}
	}
	return out, metas, nil
}

// bucketEntries are the manifest entries of one (partition, bucket).
type bucketEntries struct {
	partition []byte
	bucket    int32
	entries   []manifest.Entry
}

// groupByBucket groups entries by (partition, bucket), in partition then
// bucket order; within a group, entries keep their order.
func groupByBucket(entries []manifest.Entry) []*bucketEntries {
	byKey := map[string]*bucketEntries{}
	var out []*bucketEntries
	for _, e := range entries {
		k := string(e.Partition) + "/" + strconv.Itoa(int(e.Bucket))
		g := byKey[k]
		if g == nil {
			g = &bucketEntries{partition: e.Partition, bucket: e.Bucket}
			byKey[k] = g
			out = append(out, g)
		}
		g.entries = append(g.entries, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := string(out[i].partition), string(out[j].partition); a != b {
			return a < b
		}
		return out[i].bucket < out[j].bucket
	})
	return out
}
