//go:build duckdb_arrow

package query

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/tiering"
)

func idBatches(t *testing.T, n, rows int) []arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String}}, nil)
	var out []arrow.RecordBatch
	for i := 0; i < n; i++ {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for r := 0; r < rows; r++ {
			id := int64(i*rows + r)
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("v", id))
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	t.Cleanup(func() {
		for _, r := range out {
			r.Release()
		}
	})
	return out
}

type pacedReader struct {
	array.RecordReader
	pause time.Duration
}

func (p pacedReader) Next() bool {
	time.Sleep(p.pause)
	return p.RecordReader.Next()
}

// TestIngestStreamWhileSwitchingLogOff: batches of one ingest stream are
// queued while earlier ones commit; switching the log off in the middle
// (which waits for writes in flight and drains) neither deadlocks nor loses
// or reorders a row.
func TestIngestStreamWhileSwitchingLogOff(t *testing.T) {
	dir := t.TempDir()
	cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
	require.NoError(t, err)
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	ls := lakestream.New(cat, log, lakestream.Options{})
	tr := tiering.New(ls, tiering.Options{})
	e, err := New(ls, Options{Threads: 2, Drain: tr.Drain})
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	run(t, e, "CREATE TABLE kv (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")

	batches := idBatches(t, 60, 500)
	rr, err := array.NewRecordReader(batches[0].Schema(), batches)
	require.NoError(t, err)
	defer rr.Release()
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := e.Ingest(context.Background(), DefaultDatabase, "kv", false, pacedReader{rr, 2 * time.Millisecond})
		done <- result{n, err}
	}()
	time.Sleep(40 * time.Millisecond)
	run(t, e, "ALTER TABLE kv SET ('lakestream.enabled' = 'false')")
	select {
	case r := <-done:
		require.NoError(t, r.err)
		require.Equal(t, int64(30000), r.n)
	case <-time.After(time.Minute):
		t.Fatal("ingest did not finish")
	}
	require.Equal(t, [][]string{{"30000", "0", "29999", "30000"}}, run(t, e, "SELECT count(*), min(id), max(id), count(DISTINCT v) FROM kv"))
	require.Equal(t, [][]string{{"0"}}, run(t, e, "SELECT count(*) FROM kv WHERE v <> 'v' || id"))
}
