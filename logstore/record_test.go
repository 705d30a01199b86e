package logstore

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rows    int64
		payload []byte
	}{
		{name: "empty payload", rows: 1, payload: nil},
		{name: "small", rows: 3, payload: []byte("abc")},
		{name: "many rows", rows: 1 << 40, payload: bytes.Repeat([]byte{7}, 300)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := appendRecord(nil, tc.rows, tc.payload)
			rows, p, err := decodeRecord([]byte("k"), v)
			require.NoError(t, err)
			require.Equal(t, tc.rows, rows)
			require.Equal(t, len(tc.payload), len(p))
			require.True(t, bytes.Equal(tc.payload, p))
		})
	}
}

func TestRecordCorrupt(t *testing.T) {
	good := appendRecord(nil, 5, []byte("hello"))
	for _, tc := range []struct {
		name string
		val  []byte
	}{
		{name: "empty", val: nil},
		{name: "bad version", val: append([]byte{9}, good[1:]...)},
		{name: "short payload", val: good[:len(good)-1]},
		{name: "leftover", val: append(append([]byte(nil), good...), 0)},
		{name: "zero rows", val: appendRecord(nil, 0, []byte("x"))},
		{name: "truncated header", val: good[:1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := decodeRecord([]byte("thekey"), tc.val)
			require.ErrorIs(t, err, ErrCorrupt)
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, []byte("thekey"), ce.Key)
			require.Contains(t, err.Error(), "746865")
		})
	}
	_, err := decodeMeta([]byte("m"), appendMeta(nil, 3)[:1])
	require.ErrorIs(t, err, ErrCorrupt)
	s, err := decodeMeta([]byte("m"), appendMeta(nil, 1234))
	require.NoError(t, err)
	require.Equal(t, int64(1234), s)
}

func TestKeyRoundTrip(t *testing.T) {
	for _, b := range []Bucket{{"t", 0}, {"", 5}, {"a-long-table-id", -1}, {"x", 1<<31 - 1}} {
		k := entryKey(nil, b, 42)
		kind, gb, base, err := parseKey(k)
		require.NoError(t, err)
		require.Equal(t, prefixEntry, kind)
		require.Equal(t, b, gb)
		require.Equal(t, int64(42), base)
		mk := appendBucketPrefix(nil, prefixMeta, b)
		kind, gb, _, err = parseKey(mk)
		require.NoError(t, err)
		require.Equal(t, prefixMeta, kind)
		require.Equal(t, b, gb)
	}
	// Base offsets sort in key order.
	require.Negative(t, bytes.Compare(entryKey(nil, Bucket{"t", 1}, 255), entryKey(nil, Bucket{"t", 1}, 256)))
	_, _, _, err := parseKey(entryKey(nil, Bucket{"t", 1}, 1)[:10])
	require.Error(t, err)
}

func FuzzRecord(f *testing.F) {
	f.Add(int64(1), []byte("x"))
	f.Add(int64(10000), bytes.Repeat([]byte{1, 2}, 100))
	f.Add(int64(1)<<62, []byte{})
	f.Fuzz(func(t *testing.T, rows int64, payload []byte) {
		v := appendRecord(nil, rows, payload)
		r, p, err := decodeRecord(nil, v)
		if rows < 1 || rows > 1<<62 {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		require.NoError(t, err)
		require.Equal(t, rows, r)
		require.True(t, bytes.Equal(payload, p))
		// Any strict prefix or extension must fail to decode.
		_, _, err = decodeRecord(nil, v[:len(v)-1])
		require.ErrorIs(t, err, ErrCorrupt)
		_, _, err = decodeRecord(nil, append(v, 0))
		require.ErrorIs(t, err, ErrCorrupt)
	})
}
