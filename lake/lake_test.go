package lake

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/paimontype"
)

// newTestCatalog uses $LAKE_KEEP_WAREHOUSE/<test name> when set (to inspect with other tools).
func newTestCatalog(t *testing.T) *Catalog {
	dir := t.TempDir()
	if keep := os.Getenv("LAKE_KEEP_WAREHOUSE"); keep != "" {
		dir = filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_"))
		require.NoError(t, os.RemoveAll(dir))
	}
	c, err := OpenCatalog(dir)
	require.NoError(t, err)
	require.NoError(t, c.CreateDatabase(t.Context(), "db", false))
	return c
}

// ---- write / scan helpers ----

type row struct {
	id   int64
	name *string
	dt   string
}

func sp(s string) *string { return &s }

func buildRows(t *testing.T, tb *Table, rows []row) arrow.RecordBatch {
	rec, err := buildRowsErr(tb, rows)
	require.NoError(t, err)
	return rec
}

func scanAll(t *testing.T, tb *Table, snap *Snapshot, cols []string) []string {
	rr, err := tb.Scan(context.Background(), snap, ScanOptions{Columns: cols})
	require.NoError(t, err)
	out := readLines(t, rr)
	sort.Strings(out)
	return out
}

// readLines renders every row of rr as its values joined by commas
// ("null" for a null) and releases rr.
func readLines(t *testing.T, rr array.RecordReader) []string {
	t.Helper()
	defer rr.Release()
	var out []string
	for rr.Next() {
		rec := rr.RecordBatch()
		for r := 0; r < int(rec.NumRows()); r++ {
			var parts []string
			for c := 0; c < int(rec.NumCols()); c++ {
				col := rec.Column(c)
				if col.IsNull(r) {
					parts = append(parts, "null")
				} else {
					parts = append(parts, col.ValueStr(r))
				}
			}
			out = append(out, strings.Join(parts, ","))
		}
	}
	require.NoError(t, rr.Err())
	return out
}

// writeRows splits rows by bucket and writes them.
func writeRows(t *testing.T, w *Write, tb *Table, rows []row, kinds []RowKind, seqs []int64) {
	rec := buildRows(t, tb, rows)
	defer rec.Release()
	buckets, err := tb.Buckets(rec)
	require.NoError(t, err)
	byBucket := map[int32][]int64{}
	for i, b := range buckets {
		byBucket[b] = append(byBucket[b], int64(i))
	}
	for b, idx := range byBucket {
		sub, err := takeRecord(context.Background(), rec, idx, memory.DefaultAllocator)
		require.NoError(t, err)
		var ks []RowKind
		var ss []int64
		for _, i := range idx {
			if kinds != nil {
				ks = append(ks, kinds[i])
			}
			if seqs != nil {
				ss = append(ss, seqs[i])
			}
		}
		require.NoError(t, w.Write(context.Background(), b, sub, ks, ss))
		sub.Release()
	}
}

var testCols = []paimontype.Column{{Name: "id", Type: paimontype.DataType{Root: paimontype.TypeBigInt}}, {Name: "name", Type: paimontype.DataType{Root: paimontype.TypeVarChar, Length: paimontype.MaxLength}}, {Name: "dt", Type: paimontype.DataType{Root: paimontype.TypeVarChar, Length: paimontype.MaxLength}}}
