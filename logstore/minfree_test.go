package logstore

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAppendKeepsTheFileSystemsFreeFloor: appends that would leave the log's
// file system less than MinFree are refused with ErrDiskFull naming the
// directory (RESOURCE_EXHAUSTED for a client), write nothing, and leave
// reads alone; once space returns, appends go on at the next offsets.
func TestAppendKeepsTheFileSystemsFreeFloor(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions()
	opts.MinFree = 1 << 20
	s, err := Open(dir, opts)
	require.NoError(t, err)
	defer s.Close()
	clock := time.Unix(1000, 0)
	free := int64(100 << 20)
	s.budget.now = func() time.Time { return clock }
	s.budget.free = func(string) (int64, error) { return free, nil }
	b := Bucket{Table: "t", Bucket: 0}

	_, err = s.Append(t.Context(), []Entry{{Bucket: b, Rows: 1, Payload: []byte("acknowledged")}})
	require.NoError(t, err)

	free = 512 << 10 // another program filled the disk
	clock = clock.Add(budgetRefresh + time.Second)
	_, err = s.Append(t.Context(), []Entry{{Bucket: b, Rows: 1, Payload: []byte("refused")}})
	require.ErrorIs(t, err, ErrDiskFull)
	require.ErrorIs(t, err, ErrDiskBudget, "refused like an append over the budget")
	require.ErrorContains(t, err, dir)
	require.Equal(t, int64(1), s.HighWatermark(b), "nothing of the refused append was written")

	var got [][]byte
	require.NoError(t, s.Read(t.Context(), b, 0, 1, func(_, _ int64, payload []byte) error {
		got = append(got, append([]byte(nil), payload...))
		return nil
	}))
	require.Equal(t, [][]byte{[]byte("acknowledged")}, got, "reads go on")

	free = 100 << 20 // space came back
	clock = clock.Add(budgetRefresh + time.Second)
	off, err := s.Append(t.Context(), []Entry{{Bucket: b, Rows: 1, Payload: []byte("after")}})
	require.NoError(t, err)
	require.False(t, errors.Is(err, ErrDiskFull))
	require.Equal(t, []int64{1}, off)
}
