package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// Snapshots returns the table's snapshots that exist, oldest first. A
// snapshot expired while they are read is left out.
func (t *Table) Snapshots(ctx context.Context) ([]*Snapshot, error) {
	ids, err := t.snapshotIDs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*Snapshot, 0, len(ids))
	for _, id := range ids {
		s, err := t.Snapshot(ctx, id)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Schemas returns every schema of the table, oldest first.
func (t *Table) Schemas(ctx context.Context) ([]*paimontype.TableSchema, error) {
	ids, err := schemaIDs(ctx, t.fio, t.path)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: list schemas: %w", t.FullName(), err)
	}
	out := make([]*paimontype.TableSchema, 0, len(ids))
	for _, id := range ids {
		s, err := t.SchemaByID(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Tag reads Java Paimon's tag name (tag/tag-<name>: the snapshot it keeps,
// whose files stay while the tag does, even once the snapshot itself has
// expired). A missing tag returns an error matching fs.ErrNotExist.
func (t *Table) Tag(ctx context.Context, name string) (*Snapshot, error) {
	if name == "" || strings.ContainsAny(name, "/\\\x00") || name == "." || name == ".." {
		return nil, fmt.Errorf("lake: %s: %q is not a tag name: %w", t.FullName(), name, fs.ErrNotExist)
	}
	p := filepath.Join(t.path, "tag", "tag-"+name)
	data, err := t.fio.Read(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: read tag %q: %w", t.FullName(), name, err)
	}
	var s Snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("lake: %s: parse tag %q: %w: %w", t.FullName(), name, manifest.ErrCorrupt, err)
	}
	return &s, nil
}

// SnapshotAtTime returns the newest snapshot that exists and was committed
// at or before ms (Unix milliseconds), as Java Paimon's time travel by
// timestamp picks it; an error matching fs.ErrNotExist when there is none.
func (t *Table) SnapshotAtTime(ctx context.Context, ms int64) (*Snapshot, error) {
	ids, err := t.snapshotIDs(ctx)
	if err != nil {
		return nil, err
	}
	for i := len(ids) - 1; i >= 0; i-- {
		s, err := t.Snapshot(ctx, ids[i])
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if s.TimeMillis <= ms {
			return s, nil
		}
	}
	return nil, fmt.Errorf("lake: %s: no snapshot committed at or before %s: %w", t.FullName(), time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000"), fs.ErrNotExist)
}
