package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// crowdBatch is rows ids [from, from+n) of crowd.kv written by writer w.
func crowdBatch(w, from, n int) arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "w", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Int64Builder).Append(int64(w))
		b.Field(2).(*array.StringBuilder).Append("v" + strconv.Itoa(i))
	}
	return b.NewRecordBatch()
}

// TestCrowdIsQueuedNotRefused: a crowd much larger than the server's slots
// (two per lane) of bulk writers, single-row writers, point readers of
// t$rt, full scanners of t and t$rt, and a burst of a hundred clients each
// running SELECT 1 three times, all at once. Nothing is refused (the queue
// holds them all), nothing answers INTERNAL, every acknowledged row is in
// t$rt once, and after tiering in t once; the server serves on.
func TestCrowdIsQueuedNotRefused(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir(), "--max-concurrent-queries", "2", "--tiering-interval", "1s", "--memory-limit", "1GiB")
	admin := connect(t, srv)
	admin.mustExec("CREATE DATABASE crowd")
	admin.mustExec("CREATE TABLE crowd.kv (id BIGINT, w BIGINT, v VARCHAR, PRIMARY KEY (id)) WITH ('bucket' = '4')")
	// Keys the point readers look up.
	seed := crowdBatch(-1, 0, 1000)
	_, err := admin.ingest("crowd", "kv", "adbc.ingest.mode.append", seed)
	seed.Release()
	require.NoError(t, err)

	const (
		bulkWriters, bulkBatches, bulkRows = 4, 6, 5000
		rowWriters, rowInserts             = 6, 25
		pointReaders, pointQueries         = 6, 30
		scanners, scans                    = 4, 4
		burst, burstQueries                = 100, 3
	)
	var wg sync.WaitGroup
	errs := make(chan error, 1024)
	fail := func(who string, err error) { errs <- fmt.Errorf("%s: %w", who, err) }
	run := func(who string, f func(c *client) error) {
		c := connect(t, srv) // on the test's goroutine: connect uses require
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(c); err != nil {
				fail(who, err)
			}
		}()
	}
	for w := range bulkWriters {
		run(fmt.Sprint("bulk writer ", w), func(c *client) error {
			for b := range bulkBatches {
				rec := crowdBatch(w, 1_000_000*(w+1)+b*bulkRows, bulkRows)
				n, err := c.ingest("crowd", "kv", "adbc.ingest.mode.append", rec)
				rec.Release()
				if err != nil {
					return err
				}
				if n != bulkRows {
					return fmt.Errorf("ingest acknowledged %d rows of %d", n, bulkRows)
				}
			}
			return nil
		})
	}
	for w := range rowWriters {
		run(fmt.Sprint("row writer ", w), func(c *client) error {
			for i := range rowInserts {
				id := 100_000 + w*1000 + i
				if _, err := c.exec(fmt.Sprintf("INSERT INTO crowd.kv VALUES (%d, %d, 'r%d')", id, 100+w, id)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for r := range pointReaders {
		run(fmt.Sprint("point reader ", r), func(c *client) error {
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for range pointQueries {
				id := rng.IntN(1000)
				rows, err := c.query(fmt.Sprintf(`SELECT v FROM crowd."kv$rt" WHERE id = %d`, id))
				if err != nil {
					return err
				}
				if len(rows) != 1 || rows[0][0] != "v"+strconv.Itoa(id) {
					return fmt.Errorf("id %d: got %v", id, rows)
				}
			}
			return nil
		})
	}
	for s := range scanners {
		run(fmt.Sprint("scanner ", s), func(c *client) error {
			for i := range scans {
				table := "kv"
				if (s+i)%2 == 0 {
					table = `"kv$rt"`
				}
				rows, err := c.query("SELECT count(*), count(DISTINCT id) FROM crowd." + table)
				if err != nil {
					return err
				}
				if rows[0][0] != rows[0][1] {
					return fmt.Errorf("%s: %s rows but %s keys", table, rows[0][0], rows[0][1])
				}
			}
			return nil
		})
	}
	// The burst: a hundred connections, opened before any of them runs.
	start := make(chan struct{})
	for i := range burst {
		c := connect(t, srv)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range burstQueries {
				rows, err := c.query("SELECT 1")
				if err != nil {
					fail(fmt.Sprint("burst client ", i), err)
					return
				}
				if len(rows) != 1 || rows[0][0] != "1" {
					fail(fmt.Sprint("burst client ", i), fmt.Errorf("got %v", rows))
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.False(t, t.Failed())

	want := 1000 + bulkWriters*bulkBatches*bulkRows + rowWriters*rowInserts
	wantRows := [][]string{{strconv.Itoa(want), strconv.Itoa(want)}}
	require.Equal(t, wantRows, admin.mustQuery(`SELECT count(*), count(DISTINCT id) FROM crowd."kv$rt"`))
	// Every single-row write, by key and value.
	require.Equal(t, strconv.Itoa(rowWriters*rowInserts), admin.scalar(`SELECT count(*) FROM crowd."kv$rt" WHERE w >= 100 AND v = 'r' || id`))
	testserver.Eventually(t, time.Minute, func() error {
		if lag := admin.scalar(`SELECT sum(lag_rows) FROM sys.tiering WHERE database = 'crowd'`); lag != "0" {
			return fmt.Errorf("tiering lags %s rows", lag)
		}
		return nil
	})
	require.Equal(t, wantRows, admin.mustQuery(`SELECT count(*), count(DISTINCT id) FROM crowd.kv`))
	require.Empty(t, admin.mustQuery(`SELECT id FROM sys.statements WHERE state = 'queued'`), "no statement is left waiting")
	require.False(t, srv.Exited())
}

// TestStalledReadersDoNotLockOutOthers: clients that start a large SELECT
// and stop reading hold the long lane's slots until --stall-timeout ends
// them; meanwhile point lookups run in the short lane, and afterwards a
// scan runs too (it waits for a slot the stall timeout frees).
func TestStalledReadersDoNotLockOutOthers(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir(), "--max-concurrent-queries", "2", "--stall-timeout", "2s")
	admin := connect(t, srv)
	admin.mustExec("CREATE DATABASE st")
	admin.mustExec("CREATE TABLE st.kv (id BIGINT, w BIGINT, v VARCHAR, PRIMARY KEY (id)) WITH ('bucket' = '2')")
	rec := crowdBatch(0, 0, 300_000)
	_, err := admin.ingest("st", "kv", "adbc.ingest.mode.append", rec)
	rec.Release()
	require.NoError(t, err)

	cl := sqlClient(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 2 {
		// Far more than gRPC's and the server's buffers hold.
		info, err := cl.Execute(ctx, `SELECT k.*, r.range FROM st."kv$rt" k, range(100) r`)
		require.NoError(t, err)
		r, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
		require.NoError(t, err)
		require.True(t, r.Next()) // and read no further
		defer r.Release()
	}
	// Short work runs beside them.
	for id := range 20 {
		require.Equal(t, "v"+strconv.Itoa(id*1000), admin.scalar(fmt.Sprintf(`SELECT v FROM st."kv$rt" WHERE id = %d`, id*1000)))
	}
	// A scan waits for a slot the stall timeout frees, and is not refused.
	require.Equal(t, "300000", admin.scalar(`SELECT count(*) FROM st."kv$rt"`))
	require.False(t, srv.Exited())
}
