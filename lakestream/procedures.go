package lakestream

import (
	"context"
	"fmt"

	"github.com/flightd/flightd/lake"
)

// Paimon's procedures on tags and history (CALL sys.create_tag,
// sys.delete_tag, sys.rollback_to), with Java's semantics (lake.Table's
// CreateTag, DeleteTag and RollbackTo).

// CreateTag makes tag name of db.name's snapshot id (0: the latest).
func (s *Service) CreateTag(ctx context.Context, db, name, tag string, id int64) (*lake.Snapshot, error) {
	t, err := s.Table(ctx, db, name)
	if err != nil {
		return nil, err
	}
	return t.CreateTag(ctx, tag, id)
}

// DeleteTag removes tag from db.name.
func (s *Service) DeleteTag(ctx context.Context, db, name, tag string) error {
	t, err := s.Table(ctx, db, name)
	if err != nil {
		return err
	}
	return t.DeleteTag(ctx, tag)
}

// RollbackTo makes snapshot id, or tag's snapshot, db.name's latest. A
// table whose log is on is refused: the log's rows tiered after that
// snapshot would be tiered again from the offsets it records.
func (s *Service) RollbackTo(ctx context.Context, db, name string, id int64, tag string) (prev, cur int64, err error) {
	t, err := s.Table(ctx, db, name)
	if err != nil {
		return 0, 0, err
	}
	if Realtime(t) {
		return 0, 0, fmt.Errorf("%w: %s.%s has flightd's log on (%s): a rollback would have the log's rows tiered after that snapshot tiered again; switch the log off first (ALTER TABLE %s.%s SET ('%s' = 'false'), which tiers what it holds), roll back, then switch it on",
			lake.ErrUnsupported, db, name, OptionEnabled, db, name, OptionEnabled)
	}
	defer s.forget(db, name)
	return t.RollbackTo(ctx, id, tag)
}
