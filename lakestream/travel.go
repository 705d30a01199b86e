package lakestream

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/flightd/flightd/lake"
)

// ErrNoSnapshot wraps the error of a time travel to a snapshot, tag or time
// the table does not have.
var ErrNoSnapshot = errors.New("lakestream: no such snapshot")

// Travel names a past state of a table, as DuckDB's AT clause does: a
// snapshot id (VERSION => n), a Paimon tag (VERSION => 'name') or a time
// (TIMESTAMP => t, Unix milliseconds: the newest snapshot committed then or
// before). Exactly one is set.
type Travel struct {
	Snapshot int64
	Tag      string
	Millis   *int64
}

// TravelCut resolves a time travel of db.name (the lake table t; t$rt has
// no history) to the cut a scan reads (ScanOptions.At). The snapshot must
// have been written under the table's current schema: reading it under
// its own schema is not built yet, and reading it under today's would give
// other columns than Java Paimon's time travel, so it is refused.
func (s *Service) TravelCut(ctx context.Context, db, name string, tr Travel) (Cut, error) {
	m, err := s.table(db, name)
	if err != nil {
		return Cut{}, err
	}
	var snap *lake.Snapshot
	var what string
	switch {
	case tr.Tag != "":
		what = fmt.Sprintf("tag %q", tr.Tag)
		snap, err = m.table.Tag(ctx, tr.Tag)
	case tr.Millis != nil:
		what = "a time"
		snap, err = m.table.SnapshotAtTime(ctx, *tr.Millis)
	default:
		what = fmt.Sprintf("snapshot %d", tr.Snapshot)
		snap, err = m.table.Snapshot(ctx, tr.Snapshot)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return Cut{}, fmt.Errorf("%w: %s.%s has no %s (expired, or never made; %s.\"%s$snapshots\" lists the snapshots that exist): %w", ErrNoSnapshot, db, name, what, db, name, err)
	}
	if err != nil {
		return Cut{}, err
	}
	if snap.SchemaID != m.ts.ID {
		return Cut{}, fmt.Errorf("%w: %s of %s.%s (snapshot %d) was written under schema %d and the table is at schema %d now; time travel across a schema change is not supported yet", lake.ErrUnsupported, what, db, name, snap.ID, snap.SchemaID, m.ts.ID)
	}
	return Cut{Snapshot: snap.ID, Tag: tr.Tag, Rows: -1, Size: snap.TotalRecordCount}, nil
}
