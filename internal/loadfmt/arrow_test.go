package loadfmt

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"
)

// fileSchema is what the Parquet and Arrow files of these tests hold:
// types the table's differ from (uint32 into BIGINT, int64 into TINYINT,
// large strings into STRING).
var fileSchema = arrow.NewSchema([]arrow.Field{
	{Name: "ID", Type: arrow.PrimitiveTypes.Uint32},
	{Name: "small", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.LargeString, Nullable: true},
}, nil)

var smallTable = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "small", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "other", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
}, nil)

// fileBatches are 3 batches of 4 rows; small is 1000 (too big for
// TINYINT) at row 9 when bad.
func fileBatches(t *testing.T, mem memory.Allocator, bad bool) []arrow.RecordBatch {
	t.Helper()
	var out []arrow.RecordBatch
	b := array.NewRecordBuilder(mem, fileSchema)
	defer b.Release()
	for i := 0; i < 12; i++ {
		b.Field(0).(*array.Uint32Builder).Append(uint32(i))
		v := int64(i)
		if bad && i == 9 {
			v = 1000
		}
		b.Field(1).(*array.Int64Builder).Append(v)
		b.Field(2).(*array.LargeStringBuilder).Append("s")
		if i%4 == 3 {
			out = append(out, b.NewRecordBatch())
		}
	}
	return out
}

func writeParquet(t *testing.T, recs []arrow.RecordBatch) File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.parquet")
	fh, err := os.Create(path)
	require.NoError(t, err)
	w, err := pqarrow.NewFileWriter(fileSchema, fh, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(4)), pqarrow.NewArrowWriterProperties())
	require.NoError(t, err)
	for _, r := range recs {
		require.NoError(t, w.Write(r))
	}
	require.NoError(t, w.Close())
	st, err := os.Stat(path)
	require.NoError(t, err)
	return File{Path: path, Format: Parquet, Size: st.Size()}
}

func writeArrow(t *testing.T, recs []arrow.RecordBatch, stream bool) File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.arrow")
	fh, err := os.Create(path)
	require.NoError(t, err)
	if stream {
		w := ipc.NewWriter(fh, ipc.WithSchema(fileSchema))
		for _, r := range recs {
			require.NoError(t, w.Write(r))
		}
		require.NoError(t, w.Close())
	} else {
		w, err := ipc.NewFileWriter(fh, ipc.WithSchema(fileSchema))
		require.NoError(t, err)
		for _, r := range recs {
			require.NoError(t, w.Write(r))
		}
		require.NoError(t, w.Close())
	}
	require.NoError(t, fh.Close())
	st, err := os.Stat(path)
	require.NoError(t, err)
	return File{Path: path, Format: Arrow, Size: st.Size()}
}

func TestArrowFilesConvertToTheTable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(*testing.T, []arrow.RecordBatch) File
		where string
	}{
		{name: "parquet", write: writeParquet, where: "row group 2, row 1 (row 9 of the file, counting from 0)"},
		{name: "arrow file", write: func(t *testing.T, r []arrow.RecordBatch) File { return writeArrow(t, r, false) },
			where: "batch 2, row 1 (row 9 of the file, counting from 0)"},
		{name: "arrow stream", write: func(t *testing.T, r []arrow.RecordBatch) File { return writeArrow(t, r, true) },
			where: "batch 2, row 1 (row 9 of the file, counting from 0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			good := fileBatches(t, mem, false)
			f := tc.write(t, good)
			releaseAll(good)
			// Cut to batches of 3 rows: the source's batches of 4 are split.
			recs, pos, err := readAll(t, f, Options{Table: smallTable, BatchRows: 3, Allocator: mem})
			require.NoError(t, err)
			var ids []int64
			for _, r := range recs {
				require.Equal(t, []string{"id", "small", "s"}, []string{r.Schema().Field(0).Name, r.Schema().Field(1).Name, r.Schema().Field(2).Name})
				require.Equal(t, arrow.PrimitiveTypes.Int8, r.Column(1).DataType())
				require.Equal(t, arrow.BinaryTypes.String, r.Column(2).DataType())
				ids = append(ids, r.Column(0).(*array.Int64).Int64Values()...)
			}
			releaseAll(recs)
			require.Equal(t, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, ids)
			require.Equal(t, int64(3), pos[1].Row)
			require.Equal(t, int64(3), pos[1].GroupRow)
			require.Equal(t, 0, pos[1].Group)

			bad := fileBatches(t, mem, true)
			f = tc.write(t, bad)
			releaseAll(bad)
			recs, _, err = readAll(t, f, Options{Table: smallTable, Allocator: mem})
			defer releaseAll(recs)
			var re *RowError
			require.ErrorAs(t, err, &re)
			require.Equal(t, f.Path+": "+tc.where+`: column "small": cannot write int64 into int8: invalid: integer value 1000 not in range: -128 to 127`, err.Error())
			var n int64
			for _, r := range recs {
				n += r.NumRows()
			}
			require.Equal(t, int64(9), n, "every row before the bad one")
		})
	}

	t.Run("columns", func(t *testing.T) {
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		defer mem.AssertSize(t, 0)
		recs := fileBatches(t, mem, false)
		f := writeParquet(t, recs)
		releaseAll(recs)
		other := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
		_, _, err := readAll(t, f, Options{Table: other, Allocator: mem})
		require.Equal(t, f.Path+`: column "small" is not a column of the table (its columns: id)`, err.Error())
		notNull := arrow.NewSchema(append(smallTable.Fields(), arrow.Field{Name: "must", Type: arrow.PrimitiveTypes.Int32}), nil)
		_, _, err = readAll(t, f, Options{Table: notNull, Allocator: mem})
		require.Equal(t, f.Path+`: has no column "must", which is NOT NULL in the table`, err.Error())
		wrong := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
			{Name: "small", Type: arrow.FixedWidthTypes.Date32}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
		_, _, err = readAll(t, f, Options{Table: wrong, Allocator: mem})
		require.ErrorContains(t, err, f.Path+`: column "small": cannot write int64 into date32`)
	})

	t.Run("null in a not null column", func(t *testing.T) {
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		defer mem.AssertSize(t, 0)
		b := array.NewRecordBuilder(mem, fileSchema)
		b.Field(0).(*array.Uint32Builder).AppendValues([]uint32{1, 2, 3}, nil)
		b.Field(1).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, []bool{true, true, false})
		b.Field(2).(*array.LargeStringBuilder).AppendValues([]string{"a", "b", "c"}, nil)
		rec := b.NewRecordBatch()
		b.Release()
		f := writeArrow(t, []arrow.RecordBatch{rec}, false)
		rec.Release()
		table := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
			{Name: "small", Type: arrow.PrimitiveTypes.Int16}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
		recs, _, err := readAll(t, f, Options{Table: table, Allocator: mem})
		defer releaseAll(recs)
		require.Equal(t, f.Path+`: batch 0, row 2 (row 2 of the file, counting from 0): column "small": null in a NOT NULL column`, err.Error())
		require.Len(t, recs, 1)
		require.Equal(t, int64(2), recs[0].NumRows())
	})
}
