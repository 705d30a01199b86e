package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// Snapshot is the content of snapshot/snapshot-N (version 3, the 1.1–1.3 field set).
type Snapshot struct {
	Version                   int
	ID                        int64
	SchemaID                  int64
	BaseManifestList          string
	BaseManifestListSize      *int64
	DeltaManifestList         string
	DeltaManifestListSize     *int64
	ChangelogManifestList     *string
	ChangelogManifestListSize *int64
	IndexManifest             *string
	CommitUser                string
	CommitIdentifier          int64
	CommitKind                string
	TimeMillis                int64
	TotalRecordCount          int64
	DeltaRecordCount          int64
	ChangelogRecordCount      *int64
	Watermark                 *int64
	Statistics                *string
	Properties                map[string]string
	NextRowID                 *int64
}

// Commit kinds.
const (
	CommitKindAppend    = "APPEND"
	CommitKindCompact   = "COMPACT"
	CommitKindOverwrite = "OVERWRITE"
)

// MarshalJSON writes the snapshot in Java's field order, pretty printed, omitting null fields.
func (s *Snapshot) MarshalJSON() ([]byte, error) {
	o := paimontype.JSONObject{{Key: "version", Value: 3}, {Key: "id", Value: s.ID}, {Key: "schemaId", Value: s.SchemaID}, {Key: "baseManifestList", Value: s.BaseManifestList}}
	if s.BaseManifestListSize != nil {
		o.Add("baseManifestListSize", *s.BaseManifestListSize)
	}
	o.Add("deltaManifestList", s.DeltaManifestList)
	if s.DeltaManifestListSize != nil {
		o.Add("deltaManifestListSize", *s.DeltaManifestListSize)
	}
	if s.ChangelogManifestList != nil {
		o.Add("changelogManifestList", *s.ChangelogManifestList)
	}
	if s.ChangelogManifestListSize != nil {
		o.Add("changelogManifestListSize", *s.ChangelogManifestListSize)
	}
	if s.IndexManifest != nil {
		o.Add("indexManifest", *s.IndexManifest)
	}
	o.Add("commitUser", s.CommitUser)
	o.Add("commitIdentifier", s.CommitIdentifier)
	o.Add("commitKind", s.CommitKind)
	o.Add("timeMillis", s.TimeMillis)
	o.Add("totalRecordCount", s.TotalRecordCount)
	o.Add("deltaRecordCount", s.DeltaRecordCount)
	if s.ChangelogRecordCount != nil {
		o.Add("changelogRecordCount", *s.ChangelogRecordCount)
	}
	if s.Watermark != nil {
		o.Add("watermark", *s.Watermark)
	}
	if s.Statistics != nil {
		o.Add("statistics", *s.Statistics)
	}
	if s.Properties != nil {
		o.Add("properties", paimontype.SortedJSONObject(s.Properties))
	}
	if s.NextRowID != nil {
		o.Add("nextRowId", *s.NextRowID)
	}
	return paimontype.JacksonPretty(o), nil
}

// UnmarshalJSON reads any snapshot version (unknown fields ignored, 0.8 nullable counts).
func (s *Snapshot) UnmarshalJSON(b []byte) error {
	var o struct {
		Version                   *int              `json:"version"`
		ID                        int64             `json:"id"`
		SchemaID                  int64             `json:"schemaId"`
		BaseManifestList          string            `json:"baseManifestList"`
		BaseManifestListSize      *int64            `json:"baseManifestListSize"`
		DeltaManifestList         string            `json:"deltaManifestList"`
		DeltaManifestListSize     *int64            `json:"deltaManifestListSize"`
		ChangelogManifestList     *string           `json:"changelogManifestList"`
		ChangelogManifestListSize *int64            `json:"changelogManifestListSize"`
		IndexManifest             *string           `json:"indexManifest"`
		CommitUser                string            `json:"commitUser"`
		CommitIdentifier          int64             `json:"commitIdentifier"`
		CommitKind                string            `json:"commitKind"`
		TimeMillis                int64             `json:"timeMillis"`
		TotalRecordCount          *int64            `json:"totalRecordCount"`
		DeltaRecordCount          *int64            `json:"deltaRecordCount"`
		ChangelogRecordCount      *int64            `json:"changelogRecordCount"`
		Watermark                 *int64            `json:"watermark"`
		Statistics                *string           `json:"statistics"`
		Properties                map[string]string `json:"properties"`
		NextRowID                 *int64            `json:"nextRowId"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	*s = Snapshot{Version: 3, ID: o.ID, SchemaID: o.SchemaID, BaseManifestList: o.BaseManifestList,
		BaseManifestListSize: o.BaseManifestListSize, DeltaManifestList: o.DeltaManifestList,
		DeltaManifestListSize: o.DeltaManifestListSize, ChangelogManifestList: o.ChangelogManifestList,
		ChangelogManifestListSize: o.ChangelogManifestListSize, IndexManifest: o.IndexManifest,
		CommitUser: o.CommitUser, CommitIdentifier: o.CommitIdentifier, CommitKind: o.CommitKind,
		TimeMillis: o.TimeMillis, ChangelogRecordCount: o.ChangelogRecordCount, Watermark: o.Watermark,
		Statistics: o.Statistics, Properties: o.Properties, NextRowID: o.NextRowID}
	if o.Version != nil {
		s.Version = *o.Version
	}
	if o.TotalRecordCount != nil {
		s.TotalRecordCount = *o.TotalRecordCount
	}
	if o.DeltaRecordCount != nil {
		s.DeltaRecordCount = *o.DeltaRecordCount
	}
	return nil
}

func (t *Table) snapshotDir() string { return filepath.Join(t.path, "snapshot") }

func (t *Table) snapshotPath(id int64) string {
	return filepath.Join(t.snapshotDir(), "snapshot-"+strconv.FormatInt(id, 10))
}

// Snapshot reads snapshot-id. A missing snapshot returns an error matching fs.ErrNotExist.
func (t *Table) Snapshot(ctx context.Context, id int64) (*Snapshot, error) {
	p := t.snapshotPath(id)
	data, err := t.fio.Read(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: read snapshot %s: %w", t.FullName(), p, err)
	}
	var s Snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("lake: %s: parse snapshot %s: %w: %w", t.FullName(), p, manifest.ErrCorrupt, err)
	}
	return &s, nil
}

// latestSnapshotID finds the latest snapshot id (0 if none): the remembered latest snapshot if
// it is still the latest (see known), else resolveLatestID.
func (t *Table) latestSnapshotID(ctx context.Context) (int64, error) {
	snap, found, err := t.known(ctx, t.cat.now())
	if err != nil || found {
		return snapID(snap), err
	}
	return t.resolveLatestID(ctx)
}

func snapID(s *Snapshot) int64 {
	if s == nil {
		return 0
	}
	return s.ID
}

// resolveLatestID finds the latest snapshot id (0 if none). LATEST is only a hint: it is trusted
// only if snapshot-(LATEST+1) does not exist, else the directory listing decides.
func (t *Table) resolveLatestID(ctx context.Context) (int64, error) {
	if data, err := t.fio.Read(ctx, filepath.Join(t.snapshotDir(), "LATEST")); err == nil {
		if id, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil && id > 0 {
			next, err := t.fio.Exists(ctx, t.snapshotPath(id+1))
			if err != nil {
				return 0, err
			}
			cur, err := t.fio.Exists(ctx, t.snapshotPath(id))
			if err != nil {
				return 0, err
			}
			if !next && cur {
				return id, nil
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	ents, err := t.fio.List(ctx, t.snapshotDir())
	if err != nil {
		return 0, err
	}
	var max int64
	for _, e := range ents {
		if e.IsDir || !strings.HasPrefix(e.Name, "snapshot-") {
			continue
		}
		if id, err := strconv.ParseInt(strings.TrimPrefix(e.Name, "snapshot-"), 10, 64); err == nil && id > max {
			max = id
		}
	}
	return max, nil
}

// LatestSnapshot returns the latest snapshot, or nil, nil when the table has none, as the
// store says now: a remembered snapshot (see RecentSnapshot) is checked first (two stats, two
// HEADs at once on S3). The snapshot is shared with later calls: callers must not modify it.
func (t *Table) LatestSnapshot(ctx context.Context) (*Snapshot, error) {
	st := t.latest
	at := t.cat.now()
	snap, found, err := t.known(ctx, at)
	if err != nil || found {
		return snap, err
	}
	id, err := t.resolveLatestID(ctx)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: find latest snapshot: %w", t.FullName(), err)
	}
	if id == 0 {
		st.none(at)
		return nil, nil
	}
	// The version is taken before the read: if the file changes in between, the remembered
	// version is the older one, and the next call reads the file again.
	version, err := t.fio.Version(ctx, t.snapshotPath(id))
	if err != nil {
		return nil, fmt.Errorf("lake: %s: snapshot %d: %w", t.FullName(), id, err)
	}
	snap, err = t.Snapshot(ctx, id)
	if err != nil {
		return nil, err
	}
	st.remember(snap, version, at)
	return snap, nil
}

// known returns the remembered latest snapshot (found true; snap nil: the table had none)
// if it still is the latest: its file has the version it was read at (not expired, rolled
// back or recreated by a dropped and re-created table) and snapshot-(id+1) does not exist
// (ids are consecutive, and a committer creates the next one exclusively); a snapshot this
// process committed, remembered without a version, takes the version found. A remembered
// "no snapshot" still holds while snapshot-1 does not exist. Otherwise it forgets what it
// remembered and returns found false. at is when the check began: what it confirms was
// the latest then.
func (t *Table) known(ctx context.Context, at time.Time) (snap *Snapshot, found bool, err error) {
	st := t.latest
	snap, version, ok := st.get()
	if !ok {
		return nil, false, nil
	}
	if snap == nil {
		_, err := t.fio.Version(ctx, t.snapshotPath(1))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			st.confirm(nil, "", at)
			return nil, true, nil
		case err != nil:
			return nil, false, fmt.Errorf("lake: %s: find latest snapshot: %w", t.FullName(), err)
		}
		st.forget(nil)
		return nil, false, nil
	}
	// Both checks at once: on S3 each is a round trip.
	next := make(chan error, 1)
	go func() {
		_, err := t.fio.Version(ctx, t.snapshotPath(snap.ID+1))
		next <- err
	}()
	cur, err := t.fio.Version(ctx, t.snapshotPath(snap.ID))
	nextErr := <-next
	switch {
	case err == nil && (cur == version || version == "") && errors.Is(nextErr, fs.ErrNotExist):
		st.confirm(snap, cur, at)
		return snap, true, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
	case nextErr != nil && !errors.Is(nextErr, fs.ErrNotExist):
		err = nextErr
	default: // changed, gone, or not the latest any more
		st.forget(snap)
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("lake: %s: find latest snapshot: %w", t.FullName(), err)
}
