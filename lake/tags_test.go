package lake

import (
	"context"
	"io/fs"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/paimontype"
)

// TestTagsRollbackAndExpireLimit: CreateTag writes the snapshot's JSON,
// refuses a tag that exists and a missing snapshot; ExpireSnapshots keeps
// a tag's files and expires at most MaxDeletes snapshots; RollbackTo a
// missing tag or snapshot changes nothing, and to a tag whose snapshot
// expired writes it back and drops newer snapshots and tags.
func TestTagsRollbackAndExpireLimit(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	tb, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: []paimontype.Column{
		{Name: "a", Type: paimontype.DataType{Root: paimontype.TypeBigInt}}}}, false)
	require.NoError(t, err)
	for _, r := range []string{`[{"a": 1}]`, `[{"a": 2}]`, `[{"a": 3}]`, `[{"a": 4}]`, `[{"a": 5}]`} {
		commitJSON(t, tb, r)
	}
	_, err = tb.CreateTag(ctx, "two", 2)
	require.NoError(t, err)
	_, err = tb.CreateTag(ctx, "five", 0)
	require.NoError(t, err)
	_, err = tb.CreateTag(ctx, "two", 3)
	require.ErrorIs(t, err, ErrInvalidName)
	_, err = tb.CreateTag(ctx, "x", 9)
	require.ErrorIs(t, err, fs.ErrNotExist)
	tags, err := tb.Tags(ctx)
	require.NoError(t, err)
	require.Len(t, tags, 2)
	require.Equal(t, []string{"five", "two"}, []string{tags[0].Name, tags[1].Name})
	require.Equal(t, int64(5), tags[0].Snapshot.ID)

	later := time.Now().Add(2 * time.Hour)
	n, err := tb.ExpireSnapshots(ctx, ExpireOptions{RetainMin: 1, RetainMax: 1, MaxDeletes: 2, Now: later})
	require.NoError(t, err)
	require.Equal(t, 2, n, "at most MaxDeletes")
	n, err = tb.ExpireSnapshots(ctx, ExpireOptions{RetainMin: 1, RetainMax: 1, Now: later})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	two, err := tb.Tag(ctx, "two")
	require.NoError(t, err)
	require.Equal(t, []string{"1", "2"}, scanAll(t, tb, two, nil), "the tag's files stay")

	before, err := tb.snapshotIDs(ctx)
	require.NoError(t, err)
	_, _, err = tb.RollbackTo(ctx, 0, "missing")
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, _, err = tb.RollbackTo(ctx, 3, "")
	require.ErrorIs(t, err, fs.ErrNotExist, "expired")
	after, err := tb.snapshotIDs(ctx)
	require.NoError(t, err)
	require.Equal(t, before, after, "a refused rollback changes nothing")

	prev, cur, err := tb.RollbackTo(ctx, 0, "two")
	require.NoError(t, err)
	require.Equal(t, [2]int64{5, 2}, [2]int64{prev, cur})
	latest, err := tb.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), latest.ID)
	require.Equal(t, []string{"1", "2"}, scanAll(t, tb, latest, nil))
	tags, err = tb.Tags(ctx)
	require.NoError(t, err)
	require.Len(t, tags, 1, "the tag of snapshot 5 went with it")
	require.NoError(t, tb.DeleteTag(ctx, "two"))
	require.ErrorIs(t, tb.DeleteTag(ctx, "two"), fs.ErrNotExist)
}
