package lakestream

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/paimontype"
)

// ErrNoSnapshot wraps the error of a time travel to a snapshot, tag or time
// the table does not have.
var ErrNoSnapshot = errors.New("lakestream: no such snapshot")

// Travel names a past state of a table, as DuckDB's AT clause does: a
// snapshot id (VERSION => n), a Paimon tag (VERSION => 'name') or a time
// (TIMESTAMP => t, Unix milliseconds: the newest snapshot committed then or
// before). Exactly one is set. Version is Paimon's scan.version (Spark's
// VERSION AS OF): the tag of that name when the table has one, else the
// snapshot whose id it spells.
type Travel struct {
	Snapshot int64
	Tag      string
	Millis   *int64
	Version  string
}

// TravelCut resolves a time travel of db.name (the lake table t; t$rt has
// no history) to the cut a scan reads (ScanOptions.At). The snapshot must
// have been written under the table's current schema: reading it under
// its own schema is not built yet, and reading it under today's would give
// other columns than Java Paimon's time travel, so it is refused.
func (s *Service) TravelCut(ctx context.Context, db, name string, tr Travel) (Cut, error) {
	m, err := s.readTable(ctx, db, name)
	if err != nil {
		return Cut{}, err
	}
	return s.travelCut(ctx, m, db, name, tr, true)
}

func (s *Service) travelCut(ctx context.Context, m *tableMeta, db, name string, tr Travel, otherColumns bool) (Cut, error) {
	var snap *lake.Snapshot
	var err error
	var what string
	if tr.Version != "" {
		// As Paimon's scan.version: a tag first, then a snapshot id.
		tr = Travel{Tag: tr.Version}
		if id, perr := strconv.ParseInt(tr.Tag, 10, 64); perr == nil && id > 0 && !strings.HasPrefix(tr.Tag, "+") {
			if _, err := m.table.Tag(ctx, tr.Tag); errors.Is(err, fs.ErrNotExist) {
				tr = Travel{Snapshot: id}
			}
		}
	}
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
	if snap.SchemaID != m.ts.ID && !otherColumns {
		// A table option's travel reads t itself, whose columns are
		// today's; Java reads the past snapshot under that snapshot's
		// schema, so they must be the same (a change of options only is
		// fine).
		old, err := m.schemaByID(ctx, snap.SchemaID)
		if err != nil {
			return Cut{}, err
		}
		if !sameColumns(old, m.ts) {
			return Cut{}, fmt.Errorf("%w: %s of %s.%s (snapshot %d) was written under schema %d, whose columns differ from the table's now (schema %d); a table option cannot make %s.%s read other columns than its own: read it with %s.%s AT (VERSION => %d) instead", lake.ErrUnsupported, what, db, name, snap.ID, snap.SchemaID, m.ts.ID, db, name, db, name, snap.ID)
		}
	}
	return Cut{Snapshot: snap.ID, Tag: tr.Tag, Rows: -1, Size: snap.TotalRecordCount}, nil
}

// travelMeta is the table a read of snap goes through: m itself, or, when
// snap was written under a schema whose columns differ from m's, m under
// that schema (lake.Table.AtSchema), since Java Paimon reads a past
// snapshot with the columns it had.
func (s *Service) travelMeta(ctx context.Context, m *tableMeta, snap *lake.Snapshot) (*tableMeta, error) {
	if snap == nil || snap.SchemaID == m.ts.ID {
		return m, nil
	}
	old, err := m.schemaByID(ctx, snap.SchemaID)
	if err != nil {
		return nil, err
	}
	if sameColumns(old, m.ts) {
		return m, nil
	}
	om := newMeta(m.table.AtSchema(old))
	om.id = m.id
	return om, nil
}

// TravelSchema is the Arrow schema a read of db.name at cut returns: the
// columns of the schema its snapshot was written under.
func (s *Service) TravelSchema(ctx context.Context, db, name string, cut Cut) (*arrow.Schema, error) {
	m, err := s.lookup(ctx, db, name)
	if err != nil {
		return nil, err
	}
	snap, err := s.snapshotAt(ctx, m, db, name, &cut)
	if err != nil {
		return nil, err
	}
	if m, err = s.travelMeta(ctx, m, snap); err != nil {
		return nil, err
	}
	return m.schema, nil
}

// optionTravel is the time travel db.name's options ask for (see
// lake.TravelOptions): the cut reads of the lake table t take when they do
// not name one, nil when they read the latest snapshot. t$rt merges the
// newest snapshot with the log, so it is refused while such an option is
// set (realtime).
func (s *Service) optionTravel(ctx context.Context, m *tableMeta, db, name string, realtime bool) (*Cut, error) {
	opt, err := lake.TravelOptions(m.table.Schema().Options)
	if err != nil {
		return nil, fmt.Errorf("lakestream: read %s.%s: %w", db, name, err)
	}
	if !opt.Set {
		return nil, nil
	}
	if realtime {
		return nil, fmt.Errorf("%w: %s.%s's option %s makes the table read an older snapshot (as Java Paimon does), and %s.%s%s merges the newest one with the log; read %s.%s, or remove the option (ALTER TABLE %s.%s RESET ('%s'))",
			lake.ErrUnsupported, db, name, opt.Option, db, name, RealtimeSuffix, db, name, db, name, opt.Option)
	}
	tr := Travel{Snapshot: opt.Snapshot, Tag: opt.Tag}
	if opt.Option == lake.OptionScanTimestampMillis {
		ms := opt.Millis
		tr.Millis = &ms
	}
	cut, err := s.travelCut(ctx, m, db, name, tr, false)
	if err != nil {
		return nil, fmt.Errorf("table option %s: %w", opt.Option, err)
	}
	return &cut, nil
}

// sameColumns reports whether two schemas have the same columns: field
// ids, names and types (comments aside).
func sameColumns(a, b *paimontype.TableSchema) bool {
	if len(a.Fields) != len(b.Fields) {
		return false
	}
	for i, f := range a.Fields {
		g := b.Fields[i]
		if f.ID != g.ID || f.Name != g.Name || f.Type.String() != g.Type.String() || f.Type.NotNull != g.Type.NotNull {
			return false
		}
	}
	return true
}
