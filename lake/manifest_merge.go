package lake

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/flightd/flightd/lake/manifest"
)

// Manifest merging at commit, as Java's ManifestFileMerger.merge does it when building the base
// manifest list of a new snapshot:
//
//   - full compaction: leading manifests that are large (>= manifest.target-file-size) and hold no
//     DELETE entries are kept; when the rest together reach manifest.full-compaction-threshold-size
//     they are all read, ADD/DELETE pairs of the same file cancel (FileEntry.mergeEntries), DELETEs
//     whose ADD is gone are dropped (nothing older is left that they could cancel) and the live ADD
//     entries are rewritten into manifests of about the target size;
//   - otherwise minor compaction: runs of consecutive manifests are merged once their total size
//     reaches the target size, and a trailing run is merged when it holds at least
//     manifest.merge-min-count manifests. Within a run, ADD and DELETE of the same file cancel; a
//     DELETE whose ADD lives in an earlier manifest is kept.
//
// The set of live data files of the snapshot is unchanged by either.

const (
	defaultManifestTargetSize       = 8 << 20
	defaultManifestMergeMinCount    = 30
	defaultManifestFullCompactBytes = 16 << 20
)

// parseMemorySize parses Paimon's MemorySize syntax: a number with an optional unit
// (b, k/kb, m/mb, g/gb, t/tb and the spelled-out forms), case-insensitive.
func parseMemorySize(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	i := 0
	for i < len(t) && unicode.IsDigit(rune(t[i])) {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("invalid memory size %q", s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid memory size %q: %w", s, err)
	}
	var mul int64
	switch strings.TrimSpace(t[i:]) {
	case "", "b", "bytes":
		mul = 1
	case "k", "kb", "kibibytes":
		mul = 1 << 10
	case "m", "mb", "mebibytes":
		mul = 1 << 20
	case "g", "gb", "gibibytes":
		mul = 1 << 30
	case "t", "tb", "tebibytes":
		mul = 1 << 40
	default:
		return 0, fmt.Errorf("invalid memory size %q: unknown unit", s)
	}
	return n * mul, nil
}

func (t *Table) sizeOption(key string, def int64) (int64, error) {
	v, ok := t.schema.Options[key]
	if !ok {
		return def, nil
	}
	n, err := parseMemorySize(v)
	if err != nil {
		return 0, fmt.Errorf("lake: %s: option %s: %w", t.FullName(), key, err)
	}
	return n, nil
}

func (t *Table) intOption(key string, def int) (int, error) {
	v, ok := t.schema.Options[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("lake: %s: option %s: %w", t.FullName(), key, err)
	}
	return n, nil
}

// mergeManifests returns the base manifest list for a new snapshot from the manifests of the
// previous one. writeFile publishes a new manifest under the manifest directory.
func (t *Table) mergeManifests(ctx context.Context, metas []manifest.FileMeta, pf *pathFactory,
	writeFile func(name string, data []byte) (int64, error)) ([]manifest.FileMeta, error) {
	target, err := t.sizeOption("manifest.target-file-size", defaultManifestTargetSize)
	if err != nil {
		return nil, err
	}
	minCount, err := t.intOption("manifest.merge-min-count", defaultManifestMergeMinCount)
	if err != nil {
		return nil, err
	}
	fullSize, err := t.sizeOption("manifest.full-compaction-threshold-size", defaultManifestFullCompactBytes)
	if err != nil {
		return nil, err
	}
	if target <= 0 {
		target = defaultManifestTargetSize
	}

	// full compaction
	i := 0
	for i < len(metas) && metas[i].NumDeletedFiles == 0 && metas[i].FileSize >= target {
		i++
	}
	var restSize int64
	for _, m := range metas[i:] {
		restSize += m.FileSize
	}
	if restSize >= fullSize && len(metas)-i > 1 {
		rest, err := t.mergedEntries(ctx, metas[i:])
		if err != nil {
			return nil, err
		}
		if i > 0 && hasDeletes(rest) {
			// some DELETE cancels an ADD of a kept leading manifest: rewrite everything
			if rest, err = t.mergedEntries(ctx, metas); err != nil {
				return nil, err
			}
			i = 0
		}
		adds := rest[:0]
		for _, e := range rest {
			if e.Kind == manifest.FileKindAdd {
				adds = append(adds, e)
			}
		}
		merged, err := t.writeManifests(adds, target, pf, writeFile)
		if err != nil {
			return nil, err
		}
		return append(append([]manifest.FileMeta{}, metas[:i]...), merged...), nil
	}

	// minor compaction
	var out, run []manifest.FileMeta
	var runSize int64
	flush := func() error {
		if len(run) == 1 {
			out = append(out, run[0])
		} else if len(run) > 1 {
			es, err := t.mergedEntries(ctx, run)
			if err != nil {
				return err
			}
			merged, err := t.writeManifests(es, target, pf, writeFile)
			if err != nil {
				return err
			}
			out = append(out, merged...)
		}
		run, runSize = nil, 0
		return nil
	}
	for _, m := range metas {
		run = append(run, m)
		runSize += m.FileSize
		if runSize >= target {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	if len(run) >= minCount && minCount > 0 {
		if err := flush(); err != nil {
			return nil, err
		}
	} else {
		out = append(out, run...)
	}
	return out, nil
}

func hasDeletes(es []manifest.Entry) bool {
	for _, e := range es {
		if e.Kind == manifest.FileKindDelete {
			return true
		}
	}
	return false
}

// mergedEntries reads manifests in order and applies FileEntry.mergeEntries: an ADD and a later
// DELETE of the same file cancel; a DELETE whose ADD is not among the inputs is kept.
func (t *Table) mergedEntries(ctx context.Context, metas []manifest.FileMeta) ([]manifest.Entry, error) {
	var entries []manifest.Entry
	adds := map[fileIdentity]int{}
	for _, mf := range metas {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		es, err := t.readManifest(ctx, mf.FileName)
		if err != nil {
			return nil, err
		}
		for j := range es {
			id := identityOf(&es[j])
			switch es[j].Kind {
			case manifest.FileKindAdd:
				if _, dup := adds[id]; dup {
					return nil, fmt.Errorf("lake: %s: manifest %s: %w: file %s added twice", t.FullName(), mf.FileName, manifest.ErrCorrupt, es[j].File.FileName)
				}
				adds[id] = len(entries)
				entries = append(entries, es[j])
			case manifest.FileKindDelete:
				if idx, ok := adds[id]; ok {
					entries[idx].Kind = -1
					delete(adds, id)
				} else {
					entries = append(entries, es[j])
				}
			default:
				return nil, fmt.Errorf("lake: %s: manifest %s: %w: unknown file kind %d", t.FullName(), mf.FileName, manifest.ErrCorrupt, es[j].Kind)
			}
		}
	}
	kept := entries[:0]
	for _, e := range entries {
		if e.Kind != -1 {
			kept = append(kept, e)
		}
	}
	return kept, nil
}

// writeManifests writes entries into manifests of about target bytes each (none if empty).
func (t *Table) writeManifests(kept []manifest.Entry, target int64, pf *pathFactory,
	writeFile func(name string, data []byte) (int64, error)) ([]manifest.FileMeta, error) {
	if len(kept) == 0 {
		return nil, nil
	}
	data, err := manifest.Encode(kept)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: encode manifest: %w", t.FullName(), err)
	}
	parts := 1
	if int64(len(data)) > target {
		parts = int((int64(len(data)) + target - 1) / target)
	}
	var out []manifest.FileMeta
	per := (len(kept) + parts - 1) / parts
	for start := 0; start < len(kept); start += per {
		chunk := kept[start:min(start+per, len(kept))]
		if parts > 1 {
			if data, err = manifest.Encode(chunk); err != nil {
				return nil, fmt.Errorf("lake: %s: encode manifest: %w", t.FullName(), err)
			}
		}
		name := pf.next("manifest-", "")
		size, err := writeFile(name, data)
		if err != nil {
			return nil, err
		}
		out = append(out, t.manifestMeta(name, size, chunk))
	}
	return out, nil
}
