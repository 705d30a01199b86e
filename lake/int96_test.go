package lake

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/fileio"
)

// javaInt96 encodes epoch nanoseconds as Java Paimon's timestampToInt96
// does: millis split by truncating division, so a time before 1970 has
// negative nanoseconds of the day.
func javaInt96(nanos int64) parquet.Int96 {
	millis, nanoOfMilli := nanos/1e6, nanos%1e6
	if nanoOfMilli < 0 { // Paimon's Timestamp keeps nanoOfMillisecond in [0, 1e6)
		millis, nanoOfMilli = millis-1, nanoOfMilli+1e6
	}
	const millisPerDay = 86400 * 1000
	julianDay := millis/millisPerDay + julianUnixEpochDay
	nanosOfDay := millis%millisPerDay*1e6 + nanoOfMilli
	var v parquet.Int96
	binary.LittleEndian.PutUint64(v[:8], uint64(nanosOfDay))
	binary.LittleEndian.PutUint32(v[8:], uint32(julianDay))
	return v
}

// A TIMESTAMP(9) file Java wrote with a time before 1970 failed to read:
// "parquet INT96 timestamp at index 0: invalid INT96 nanoseconds of day".
func TestInt96BeforeEpochFromJavaReads(t *testing.T) {
	want := []int64{-1, -86400*1e9 - 5, -1e9 * 3600 * 24 * 365 * 200, 0, 1700000000123456789}
	node := schema.NewInt96Node("ts", parquet.Repetitions.Optional, 1)
	root, err := schema.NewGroupNode("paimon_schema", parquet.Repetitions.Required, schema.FieldList{node}, -1)
	require.NoError(t, err)
	var buf bytes.Buffer
	w := file.NewParquetWriter(&buf, root)
	rgw, err := w.AppendRowGroupChecked()
	require.NoError(t, err)
	cw, err := rgw.NextColumn()
	require.NoError(t, err)
	vals := make([]parquet.Int96, 0, len(want))
	defs := make([]int16, 0, len(want)+1)
	for _, n := range want {
		vals = append(vals, javaInt96(n))
		defs = append(defs, 1)
	}
	defs = append(defs, 0) // and a null
	_, err = cw.(*file.Int96ColumnChunkWriter).WriteBatch(vals, defs, nil)
	require.NoError(t, err)
	require.NoError(t, cw.Close())
	require.NoError(t, rgw.Close())
	require.NoError(t, w.Close())

	ctx := context.Background()
	dir := t.TempDir()
	fio := fileio.Local{}
	path := dir + "/java.parquet"
	out, err := fio.Create(ctx, path)
	require.NoError(t, err)
	_, err = out.Write(buf.Bytes())
	require.NoError(t, err)
	require.NoError(t, out.Close())
	pf, err := openParquet(ctx, fio, path, memory.DefaultAllocator)
	require.NoError(t, err)
	defer pf.Close()
	typ := &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"} // TIMESTAMP_LTZ(9)
	rec, err := pf.readRowGroup(ctx, 0, []arrow.Field{{Name: "ts", Type: typ, Nullable: true}}, memory.DefaultAllocator)
	require.NoError(t, err)
	defer rec.Release()
	col := rec.Column(0).(*array.Timestamp)
	require.Equal(t, len(want)+1, col.Len())
	for i, n := range want {
		require.Equal(t, arrow.Timestamp(n), col.Value(i), "row %d", i)
	}
	require.True(t, col.IsNull(len(want)))
	require.True(t, arrow.TypeEqual(typ, col.DataType()))
}
