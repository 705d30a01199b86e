//go:build duckdb_arrow

package query

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/admit"
	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/query/ingest"
	"github.com/flightd/flightd/query/plan"
)

func TestShortWorkIsBoundedByItsText(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE DATABASE shop")
	run(t, e, "CREATE TABLE shop.kv (id BIGINT, region VARCHAR, v VARCHAR, PRIMARY KEY (id, region)) WITH ('bucket' = '2')")
	run(t, e, "CREATE TABLE shop.logs (msg VARCHAR)")
	ctx := context.Background()
	for sql, short := range map[string]bool{
		"SELECT 1":                                                      true,
		"SELECT version(), 1 + 2":                                       true,
		"SELECT * FROM sys.tiering":                                     true,
		"SELECT * FROM sys.statements":                                  true,
		"SELECT table_name FROM information_schema.tables":              true,
		"SELECT * FROM shop.\"kv$rt\" WHERE id = 7 AND region = 'eu'":   true,
		"SELECT v FROM shop.kv WHERE region = 'eu' AND id IN (1, 2, 3)": true,
		"USE shop":              true,
		"SET streaming = false": true,
		"CALL sys.cancel(3)":    true,
		"INSERT INTO shop.logs VALUES ('a'), ('b')": true,
		// The key not fixed, a scan, an aggregate, a table function: long.
		"SELECT * FROM shop.\"kv$rt\" WHERE id = 7":            false,
		"SELECT * FROM shop.kv WHERE id > 7 AND region = 'eu'": false,
		"SELECT * FROM shop.logs":                              false,
		"SELECT count(*) FROM shop.\"kv$rt\"":                  false,
		"SELECT count(*) FROM range(1000000000)":               false,
		"CALL sys.compact('shop.kv')":                          false, // Paimon's procedures read and write the lake
		"SELECT 1 FROM shop.kv a JOIN shop.kv b USING (id)":    false,
		"INSERT INTO shop.logs SELECT v FROM shop.kv":          false,
		"CREATE TABLE shop.x (a INT)":                          false,
		"SELECT (SELECT count(*) FROM shop.logs)":              false,
		"SELECT 1" + strings.Repeat(" ", maxShortText):         false,
	} {
		require.Equal(t, short, e.ShortWork(ctx, plan.Analyze(sql)), sql)
	}
}

// TestSysStatementsListsAndCallCancelEnds: sys.statements shows what the
// admission controller runs and queues, and CALL sys.cancel(id) ends it;
// an unknown id or another procedure is refused naming what is wrong.
func TestSysStatementsListsAndCallCancelEnds(t *testing.T) {
	adm := admit.New(admit.Options{LongSlots: 1})
	e := newTestEngineWith(t, Options{Threads: 2, Admission: adm})
	st, sctx, err := adm.Admit(context.Background(), admit.Request{Lane: admit.Long, Kind: "query", SQL: "SELECT * FROM big", User: "ann", Client: "127.0.0.1:5"})
	require.NoError(t, err)
	defer st.Done()
	st.Sent(42)
	rows := run(t, e, "SELECT id, \"user\", client, lane, kind, state, rows_sent, sql, started_at IS NOT NULL FROM sys.statements")
	require.Equal(t, [][]string{{"1", "ann", "127.0.0.1:5", "long", "query", "running", "42", "SELECT * FROM big", "true"}}, rows)

	_, err = e.Execute(context.Background(), plan.Analyze("CALL sys.cancel(1)"))
	require.NoError(t, err)
	<-sctx.Done()
	require.ErrorIs(t, context.Cause(sctx), admit.ErrCancelled)

	_, err = e.Execute(context.Background(), plan.Analyze("CALL sys.cancel(99)"))
	require.ErrorIs(t, err, engine.ErrNotFound)
	require.ErrorContains(t, err, "99")
	_, err = e.Execute(context.Background(), plan.Analyze("CALL sys.nope('db.t', 3)"))
	require.ErrorIs(t, err, engine.ErrInvalid)
	require.ErrorContains(t, err, "sys.cancel")
	_, err = e.Execute(context.Background(), plan.Analyze("CALL sys.cancel('x')"))
	require.ErrorIs(t, err, engine.ErrInvalid)
}

// gatedReader hands out its batches one at a time, each after the test
// lets it (so the test sees how many are read ahead of being durable).
type gatedReader struct {
	array.RecordReader
	read chan struct{}
}

func (g *gatedReader) Next() bool {
	ok := g.RecordReader.Next()
	if ok {
		g.read <- struct{}{}
	}
	return ok
}

// TestIngestStreamsShareOneMemoryBudget: streams read a batch only when the
// ingest budget has room, so the bytes held across them stay under the
// budget plus one batch per stream; every row is written.
func TestIngestStreamsShareOneMemoryBudget(t *testing.T) {
	batches := idBatches(t, 12, 20000)
	size := ingest.Copies * arrowutil.RecordBytes(batches[0])
	// ingestQueueBytes 1: one write queued at a time, so the bound below is tight
	e := newTestEngineWith(t, Options{Threads: 2, IngestMemory: 3 * size, IngestReserve: size, ingestQueueBytes: 1})
	run(t, e, "CREATE TABLE ingested (id BIGINT, v VARCHAR)")
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak := int64(0)
	for s := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rr, err := array.NewRecordReader(batches[0].Schema(), batches[s*3:s*3+3])
			require.NoError(t, err)
			read := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for range read {
					mu.Lock()
					peak = max(peak, e.ingestMem.Used())
					mu.Unlock()
				}
			}()
			n, err := e.Ingest(context.Background(), "default", "ingested", false, &gatedReader{RecordReader: rr, read: read})
			close(read)
			<-done
			require.NoError(t, err)
			require.EqualValues(t, 60000, n)
		}()
	}
	wg.Wait()
	require.Zero(t, e.ingestMem.Used(), "every batch's memory is given back once durable")
	require.LessOrEqual(t, peak, 3*size+4*2*size, "the budget plus, per stream, a batch read and one queued")
	require.Equal(t, [][]string{{"240000", "240000"}}, run(t, e, `SELECT count(*), count(DISTINCT id) FROM "ingested$rt"`))
}

// blockedReader blocks in Next until its context ends: an admitted stream
// whose client sends nothing.
type blockedReader struct {
	array.RecordReader
	ctx     context.Context
	started chan struct{}
}

func (b *blockedReader) Next() bool {
	close(b.started)
	<-b.ctx.Done()
	return false
}

// TestIngestStreamWaitingForMemoryIsRefusedAfterTheWait: while admitted
// streams hold the ingest budget, a new stream waits, then is refused with
// RESOURCE_EXHAUSTED naming the bound; once they end, streams run again.
func TestIngestStreamWaitingForMemoryIsRefusedAfterTheWait(t *testing.T) {
	batches := idBatches(t, 1, 1000)
	e := newTestEngineWith(t, Options{Threads: 2, IngestMemory: 1 << 20, IngestReserve: 1 << 20, IngestWait: 20 * time.Millisecond})
	run(t, e, "CREATE TABLE waits (id BIGINT, v VARCHAR)")
	ctx, cancel := context.WithCancel(context.Background())
	held := make(chan error, 4)
	for range 4 { // a stream is admitted with at most a quarter of the budget
		rr, err := array.NewRecordReader(batches[0].Schema(), batches)
		require.NoError(t, err)
		hold := &blockedReader{RecordReader: rr, ctx: ctx, started: make(chan struct{})}
		go func() { _, err := e.Ingest(context.Background(), "default", "waits", false, hold); held <- err }()
		<-hold.started // admitted
	}

	rr2, err := array.NewRecordReader(batches[0].Schema(), batches)
	require.NoError(t, err)
	_, err = e.Ingest(context.Background(), "default", "waits", false, rr2)
	require.ErrorIs(t, err, engine.ErrExhausted)
	require.ErrorContains(t, err, "--queue-timeout")
	cancel()
	for range 4 {
		require.NoError(t, <-held)
	}
	require.Zero(t, e.ingestMem.Used())

	rr3, err := array.NewRecordReader(batches[0].Schema(), batches)
	require.NoError(t, err)
	n, err := e.Ingest(context.Background(), "default", "waits", false, rr3)
	require.NoError(t, err)
	require.EqualValues(t, 1000, n)
}
