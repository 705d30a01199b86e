package lakestream

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"

	"github.com/flightd/flightd/lake"
)

// DrainFunc moves every log record of db.name acknowledged before the call
// into the lake (package tiering's Drain).
type DrainFunc func(ctx context.Context, db, name string) error

// DirectCommitUser is the Paimon commit user of writes to tables whose log
// is off.
const DirectCommitUser = "__flightd_direct"

// maxDirectRetries bounds commit retries when other committers race a
// direct write.
const maxDirectRetries = 20

// gate returns the lock that orders writes of db.name against switching its
// log on or off: writes hold it shared, the switch exclusively.
func (s *Service) gate(db, name string) *sync.RWMutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := metaKey(db, name)
	g := s.gates[k]
	if g == nil {
		g = &sync.RWMutex{}
		s.gates[k] = g
	}
	return g
}

// SetRealtime turns the log of db.name on or off.
//
// Off: new writes wait; drain moves everything acknowledged into the lake;
// the table gets lakestream.enabled=false and its log is dropped. Writes
// then commit to the lake directly (one snapshot per write), and t$rt no
// longer exists.
//
// On: the table gets a new log (a new lakestream.table-id) that starts at
// the current snapshot, recorded by an empty snapshot with zero offsets.
func (s *Service) SetRealtime(ctx context.Context, db, name string, on bool, drain DrainFunc) error {
	g := s.gate(db, name)
	g.Lock()
	defer g.Unlock()
	m, err := s.table(ctx, db, name)
	if err != nil {
		return err
	}
	if Realtime(m.table) == on {
		return nil
	}
	if !on {
		if drain == nil {
			return errors.New("lakestream: no tiering service to drain the log")
		}
		if err := drain(ctx, db, name); err != nil {
			return fmt.Errorf("lakestream: drain %s.%s before disabling its log: %w", db, name, err)
		}
		if _, err := s.cat.AlterTableOptions(ctx, db, name, map[string]string{OptionEnabled: "false"}); err != nil {
			return err
		}
		s.forget(db, name)
		s.cache.dropTable(m.id)
		return s.log.DropTable(ctx, m.id)
	}
	id := uuid.NewString()
	t, err := s.cat.AlterTableOptions(ctx, db, name, map[string]string{OptionEnabled: "true", OptionTableID: id, OptionLog: s.log.Describe().ID})
	if err != nil {
		return err
	}
	s.forget(db, name)
	// Anchor the new log at the current snapshot, so that reads find its
	// offsets without walking the table's history.
	n := t.Schema().NumBuckets()
	if n <= 0 {
		n = 1
	}
	offs := &Offsets{Version: 1, TableID: id, BucketOffsets: make([]int64, n)}
	return s.commitDirect(ctx, t, nil, map[string]string{OffsetsProperty: offs.Encode()})
}

// commitDirect commits parts to the lake as one snapshot, retrying when
// another committer got there first.
func (s *Service) commitDirect(ctx context.Context, t *lake.Table, parts []bucketPart, props map[string]string) error {
	for attempt := 0; ; attempt++ {
		latest, err := t.LatestSnapshot(ctx)
		if err != nil {
			return err
		}
		var expected int64
		if latest != nil {
			expected = latest.ID
		}
		w := t.NewWrite(ctx)
		for _, p := range parts {
			var kinds []lake.RowKind
			var seqs []int64
			if t.Schema().HasPrimaryKey() {
				kinds = make([]lake.RowKind, p.rows)
				seqs = make([]int64, p.rows)
				for i := range kinds {
					if p.kinds != nil {
						kinds[i] = lake.RowKind(p.kinds[i])
					}
					seqs[i] = int64(i) // the lake moves them above the bucket's newest
				}
			}
			if err := w.Write(ctx, p.bucket, p.rec, kinds, seqs); err != nil {
				w.Abort()
				return err
			}
		}
		_, err = w.Commit(ctx, lake.CommitOptions{CommitUser: DirectCommitUser, Identifier: expected + 1, ExpectedLatest: expected, Properties: props})
		if err == nil {
			return nil
		}
		w.Abort()
		if !errors.Is(err, lake.ErrCommitConflict) || attempt >= maxDirectRetries {
			return err
		}
	}
}

// writeDirect commits a conformed batch of a table whose log is off.
func (s *Service) writeDirect(ctx context.Context, m *tableMeta, rec arrow.RecordBatch, buckets []int32, kinds []byte) error {
	parts, err := splitByBucket(ctx, s.mem, rec, buckets, kinds)
	if err != nil {
		return err
	}
	defer func() {
		for _, p := range parts {
			p.rec.Release()
		}
	}()
	s.mu.Lock()
	l := s.directLocks[m.id]
	if l == nil {
		l = &sync.Mutex{}
		s.directLocks[m.id] = l
	}
	s.mu.Unlock()
	l.Lock() // one direct commit per table at a time: no pointless conflicts
	defer l.Unlock()
	// Carry the offsets forward so a later switch back on keeps its anchor.
	latest, err := m.table.LatestSnapshot(ctx)
	if err != nil {
		return err
	}
	var props map[string]string
	if latest != nil {
		if v, ok := latest.Properties[OffsetsProperty]; ok {
			props = map[string]string{OffsetsProperty: v}
		}
	}
	return s.commitDirect(ctx, m.table, parts, props)
}
