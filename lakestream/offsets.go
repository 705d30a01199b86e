package lakestream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/flightd/flightd/lake"
)

// OffsetsProperty is the snapshot property that records, per bucket, the
// exclusive end offset of the log records the snapshot holds:
//
//	{"version":1,"table_id":"<lakestream.table-id>","bucket_offsets":[o0,o1,...]}
//
// bucket_offsets[b] is the first log offset of bucket b that is NOT in the
// lake. It is written in the same atomic snapshot commit as the data files
// that hold the records below it, and carried forward unchanged for buckets
// a round did not touch. The shape follows Fluss's tiered-offsets file.
const OffsetsProperty = "lakestream.log-offsets"

// CommitUser is the Paimon commit user of flightd's tiering commits.
const CommitUser = "__flightd_lakestream_tiering"

// Offsets is the decoded OffsetsProperty.
type Offsets struct {
	Version       int     `json:"version"`
	TableID       string  `json:"table_id"`
	BucketOffsets []int64 `json:"bucket_offsets"`
}

// Of returns the offset of bucket b (0 when absent).
func (o *Offsets) Of(b int32) int64 {
	if o == nil || int(b) >= len(o.BucketOffsets) || b < 0 {
		return 0
	}
	return o.BucketOffsets[b]
}

// BucketOffsetsOrEmpty is nil-safe access to the offsets.
func (o *Offsets) BucketOffsetsOrEmpty() []int64 {
	if o == nil {
		return nil
	}
	return o.BucketOffsets
}

// With returns a copy of o with bucket b set to off.
func (o *Offsets) With(b int32, off int64) *Offsets {
	n := &Offsets{Version: 1}
	if o != nil {
		n.TableID = o.TableID
		n.BucketOffsets = append([]int64(nil), o.BucketOffsets...)
	}
	for int(b) >= len(n.BucketOffsets) {
		n.BucketOffsets = append(n.BucketOffsets, 0)
	}
	n.BucketOffsets[b] = off
	return n
}

// Encode renders the property value.
func (o *Offsets) Encode() string {
	b, _ := json.Marshal(o)
	return string(b)
}

func decodeOffsets(s string) (*Offsets, error) {
	var o Offsets
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return nil, fmt.Errorf("lakestream: bad %s %q: %w", OffsetsProperty, s, err)
	}
	if o.Version != 1 {
		return nil, fmt.Errorf("lakestream: %s version %d is not supported", OffsetsProperty, o.Version)
	}
	return &o, nil
}

// maxSnapshotWalk bounds how far back LakeOffsets looks for a snapshot of
// ours behind snapshots that other engines committed.
const maxSnapshotWalk = 10000

// LakeOffsets returns the log offsets that snapshot snap of t holds: those
// recorded by the newest snapshot at or before snap that carries this
// table's OffsetsProperty. nil means none (nothing tiered yet).
func LakeOffsets(ctx context.Context, t *lake.Table, snap *lake.Snapshot) (*Offsets, error) {
	o, _, err := OffsetsSnapshot(ctx, t, snap)
	return o, err
}

// OffsetsSnapshot is LakeOffsets that also returns the id of the snapshot
// that recorded the offsets (0 when none did). A gap in the history before
// that snapshot is found is an error: guessing "nothing tiered" there would
// tier the log a second time.
func OffsetsSnapshot(ctx context.Context, t *lake.Table, snap *lake.Snapshot) (*Offsets, int64, error) {
	id := TableID(t)
	for i := 0; snap != nil && i < maxSnapshotWalk; i++ {
		if v, ok := snap.Properties[OffsetsProperty]; ok {
			o, err := decodeOffsets(v)
			if err != nil {
				return nil, 0, fmt.Errorf("%s.%s snapshot %d: %w", t.Database(), t.Name(), snap.ID, err)
			}
			if o.TableID == id {
				return o, snap.ID, nil
			}
		}
		if snap.ID <= 1 {
			return nil, 0, nil
		}
		prev, err := t.Snapshot(ctx, snap.ID-1)
		if err != nil {
			return nil, 0, fmt.Errorf("lakestream: %s.%s: looking for the log offsets behind snapshot %d: %w", t.Database(), t.Name(), snap.ID, err)
		}
		snap = prev
	}
	if snap != nil {
		return nil, 0, fmt.Errorf("lakestream: %s.%s: no log offsets in the newest %d snapshots", t.Database(), t.Name(), maxSnapshotWalk)
	}
	return nil, 0, nil
}
