package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/flightd/flightd/lake/manifest"
)

// Tags, as Java Paimon's TagManager keeps them: tag/tag-<name> holds the
// JSON of the snapshot the tag names (a tag made with a retention time
// also has tagCreateTime and tagTimeRetained). A tag keeps its snapshot's
// files while it exists, even once the snapshot expired (ExpireSnapshots
// and RemoveOrphanFiles read every tag).

// TagInfo is one tag: its name, the snapshot it keeps, and the creation
// time and retention Java writes for a tag made with a retention time
// (JSON as written, "" when absent).
type TagInfo struct {
	Name         string
	Snapshot     *Snapshot
	CreateTime   string
	TimeRetained string
}

func (t *Table) tagDir() string { return filepath.Join(t.path, "tag") }

func (t *Table) tagPath(name string) string { return filepath.Join(t.tagDir(), "tag-"+name) }

// checkTagName refuses names Java's TagManager refuses (blank ones) and
// names that are no file name.
func (t *Table) checkTagName(name string) error {
	if strings.TrimSpace(name) == "" || strings.ContainsAny(name, "/\\\x00") || name == "." || name == ".." {
		return fmt.Errorf("lake: %s: %w: %q is not a tag name (a tag's name is a file name, not blank)", t.FullName(), ErrInvalidName, name)
	}
	return nil
}

// Tags lists the table's tags by name.
func (t *Table) Tags(ctx context.Context) ([]TagInfo, error) {
	ents, err := t.fio.List(ctx, t.tagDir())
	if err != nil {
		return nil, fmt.Errorf("lake: %s: list tags: %w", t.FullName(), err)
	}
	var out []TagInfo
	for _, e := range ents {
		if e.IsDir || !strings.HasPrefix(e.Name, "tag-") {
			continue
		}
		name := strings.TrimPrefix(e.Name, "tag-")
		data, err := t.fio.Read(ctx, t.tagPath(name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("lake: %s: read tag %q: %w", t.FullName(), name, err)
		}
		var s Snapshot
		var extra struct {
			CreateTime   json.RawMessage `json:"tagCreateTime"`
			TimeRetained json.RawMessage `json:"tagTimeRetained"`
		}
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, fmt.Errorf("lake: %s: parse tag %q: %w: %w", t.FullName(), name, manifest.ErrCorrupt, err)
		}
		_ = json.Unmarshal(data, &extra)
		out = append(out, TagInfo{Name: name, Snapshot: &s, CreateTime: rawText(extra.CreateTime), TimeRetained: rawText(extra.TimeRetained)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// rawText is a JSON value as text: a string's content, else the JSON.
func rawText(m json.RawMessage) string {
	var s string
	if len(m) == 0 || string(m) == "null" {
		return ""
	}
	if json.Unmarshal(m, &s) == nil {
		return s
	}
	return string(m)
}

// CreateTag makes tag name of snapshot id (the latest when id is 0), as
// Java's createTag: the snapshot's JSON under tag/tag-<name>. A tag of
// that name must not exist; the snapshot must.
func (t *Table) CreateTag(ctx context.Context, name string, id int64) (*Snapshot, error) {
	if err := t.checkTagName(name); err != nil {
		return nil, err
	}
	if id == 0 {
		latest, err := t.LatestSnapshot(ctx)
		if err != nil {
			return nil, err
		}
		if latest == nil {
			return nil, fmt.Errorf("lake: %s: no snapshot to tag: %w", t.FullName(), fs.ErrNotExist)
		}
		id = latest.ID
	}
	data, err := t.fio.Read(ctx, t.snapshotPath(id))
	if err != nil {
		return nil, fmt.Errorf("lake: %s: tag %q: read snapshot %d: %w", t.FullName(), name, id, err)
	}
	var s Snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("lake: %s: parse snapshot %d: %w: %w", t.FullName(), id, manifest.ErrCorrupt, err)
	}
	if err := t.fio.MkdirAll(ctx, t.tagDir()); err != nil {
		return nil, fmt.Errorf("lake: %s: %w", t.FullName(), err)
	}
	if err := t.fio.CreateExclusive(ctx, t.tagPath(name), data); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lake: %s: %w: tag %q already exists", t.FullName(), ErrInvalidName, name)
		}
		return nil, fmt.Errorf("lake: %s: create tag %q: %w", t.FullName(), name, err)
	}
	if err := t.fio.SyncDir(ctx, t.tagDir()); err != nil {
		return nil, fmt.Errorf("lake: %s: %w", t.FullName(), err)
	}
	return &s, nil
}

// DeleteTag removes tag name, which must exist. Files only it kept are
// left to RemoveOrphanFiles.
func (t *Table) DeleteTag(ctx context.Context, name string) error {
	if err := t.checkTagName(name); err != nil {
		return err
	}
	ok, err := t.fio.Exists(ctx, t.tagPath(name))
	if err != nil {
		return fmt.Errorf("lake: %s: %w", t.FullName(), err)
	}
	if !ok {
		return fmt.Errorf("lake: %s: tag %q doesn't exist: %w", t.FullName(), name, fs.ErrNotExist)
	}
	if err := t.fio.Remove(ctx, t.tagPath(name)); err != nil {
		return fmt.Errorf("lake: %s: delete tag %q: %w", t.FullName(), name, err)
	}
	return t.fio.SyncDir(ctx, t.tagDir())
}

// RollbackTo makes snapshot id, or the snapshot of tag (when tag is set),
// the table's latest, as Java's rollbackTo does (RollbackHelper): the
// LATEST hint names it, every newer snapshot is deleted, newest first, and
// so is every tag of a newer snapshot; a tag's snapshot that expired is
// written back from the tag first. Data files stay (RemoveOrphanFiles
// removes those nothing references). It returns the latest snapshot
// before and after. What it is asked for is checked before anything
// changes: a missing snapshot or tag changes nothing.
func (t *Table) RollbackTo(ctx context.Context, id int64, tag string) (prev, cur int64, err error) {
	latest, err := t.LatestSnapshot(ctx)
	if err != nil {
		return 0, 0, err
	}
	if latest == nil {
		return 0, 0, fmt.Errorf("lake: %s: no snapshot, nothing to roll back: %w", t.FullName(), fs.ErrNotExist)
	}
	var restore []byte // the tag's snapshot, when its own file expired
	if tag != "" {
		if err := t.checkTagName(tag); err != nil {
			return 0, 0, err
		}
		data, err := t.fio.Read(ctx, t.tagPath(tag))
		if err != nil {
			return 0, 0, fmt.Errorf("lake: %s: read tag %q: %w", t.FullName(), tag, err)
		}
		var s Snapshot
		if err := json.Unmarshal(data, &s); err != nil {
			return 0, 0, fmt.Errorf("lake: %s: parse tag %q: %w: %w", t.FullName(), tag, manifest.ErrCorrupt, err)
		}
		id = s.ID
		ok, err := t.fio.Exists(ctx, t.snapshotPath(id))
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			// Java writes the tag's snapshot back (without the tag's own
			// fields).
			if restore, err = s.MarshalJSON(); err != nil {
				return 0, 0, err
			}
		}
	} else if _, err := t.Snapshot(ctx, id); err != nil {
		return 0, 0, err
	}
	if id > latest.ID {
		return 0, 0, fmt.Errorf("lake: %s: snapshot %d is newer than the latest, %d: %w", t.FullName(), id, latest.ID, fs.ErrNotExist)
	}
	tags, err := t.Tags(ctx)
	if err != nil {
		return 0, 0, err
	}
	ids, err := t.snapshotIDs(ctx)
	if err != nil {
		return 0, 0, err
	}
	if restore != nil {
		if err := t.fio.CreateExclusive(ctx, t.snapshotPath(id), restore); err != nil {
			return 0, 0, fmt.Errorf("lake: %s: write back snapshot %d of tag %q: %w", t.FullName(), id, tag, err)
		}
		_ = t.fio.WriteAtomic(ctx, filepath.Join(t.snapshotDir(), "EARLIEST"), []byte(strconv.FormatInt(id, 10)))
	}
	_ = t.fio.WriteAtomic(ctx, filepath.Join(t.snapshotDir(), "LATEST"), []byte(strconv.FormatInt(id, 10)))
	for i := len(ids) - 1; i >= 0 && ids[i] > id; i-- {
		if err := t.fio.Remove(ctx, t.snapshotPath(ids[i])); err != nil {
			return 0, 0, fmt.Errorf("lake: %s: delete snapshot %d: %w", t.FullName(), ids[i], err)
		}
	}
	if err := t.fio.SyncDir(ctx, t.snapshotDir()); err != nil {
		return 0, 0, fmt.Errorf("lake: %s: %w", t.FullName(), err)
	}
	removed := false
	for _, tg := range tags {
		if tg.Snapshot.ID > id {
			if err := t.fio.Remove(ctx, t.tagPath(tg.Name)); err != nil {
				return 0, 0, fmt.Errorf("lake: %s: delete tag %q: %w", t.FullName(), tg.Name, err)
			}
			removed = true
		}
	}
	if removed {
		if err := t.fio.SyncDir(ctx, t.tagDir()); err != nil {
			return 0, 0, fmt.Errorf("lake: %s: %w", t.FullName(), err)
		}
	}
	return latest.ID, id, nil
}
