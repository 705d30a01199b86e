package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightd/flightd/internal/testkafka"
	"github.com/flightd/flightd/internal/testserver"
)

// crashCycles is how many kill/restart cycles TestCrashModel runs:
// $FLIGHTD_CRASH_CYCLES, default 20 (make soak runs 200).
func crashCycles() int {
	if n, err := strconv.Atoi(os.Getenv("FLIGHTD_CRASH_CYCLES")); err == nil && n > 0 {
		return n
	}
	return 20
}

var kvSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64},
}, nil)

func kvBatch(ids, vs []int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, kvSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	b.Field(1).(*array.Int64Builder).AppendValues(vs, nil)
	return b.NewRecordBatch()
}

// pkKey is a primary key of the model: crash.pk's id (p is 0), or
// crash.ppk's (p, id), a key that includes the partition column.
type pkKey struct{ p, id int64 }

// pkModel is a writer's view of one primary-key table.
type pkModel struct {
	acked   map[pkKey]int64 // key -> v of the newest acknowledged write
	pending map[pkKey]int64 // the batch in flight when the server died
}

// crashWriter owns the keys id ≡ w (mod writers) of the PK tables and the
// append rows whose v it generates, so its own acknowledgement order is the
// log order of everything it wrote.
type crashWriter struct {
	w       int
	pk, ppk pkModel
	apAcked map[int64]bool // append rows acknowledged (by v)
	apPend  []int64        // the append batch in flight
	next    int64          // next v
	// ticket is the ticket of the writer's last INSERT sent as a statement
	// query (as Python's cursor.execute does): it ran at GetFlightInfo, and
	// fetching it again, before or after a restart, must never run it again.
	ticket *flight.Ticket
	// inserts counts the INSERT statement queries acknowledged, over all
	// writers of a run (shared).
	inserts *atomic.Int64
}

var pkvSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "p", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64},
}, nil)

func pkvBatch(ids, ps, vs []int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, pkvSchema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	b.Field(1).(*array.Int64Builder).AppendValues(ps, nil)
	b.Field(2).(*array.Int64Builder).AppendValues(vs, nil)
	return b.NewRecordBatch()
}

// TestCrashModel runs concurrent writers against the real binary, kills it
// with SIGKILL at random moments (during ingest, tiering rounds and Paimon
// commits alike), restarts it, and checks t$rt against a model after every
// restart: every acknowledged write is there exactly once (newest version
// per key), a write in flight at the kill is there entirely or not at all,
// and after a final drain the lake equals t$rt. The snapshots must be valid
// Paimon: every paimonEvery-th cycle and at the end, pypaimon reads the
// snapshot flightd serves as crash.t and must see the same rows (see
// checkLakeWithPaimon; skipped, with a log line, without
// FLIGHTD_PAIMON_PYTHON).
func TestCrashModel(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("crash cycles are not short")
	}
	runCrashModel(t, crashCycles())
}

// TestCrashModelKafka is TestCrashModel with the log on a real Kafka
// broker: every acknowledged write exactly once in t$rt and in the lake,
// every killed write (a transaction across buckets left open) all or
// nothing. A third of the cycles (at least 6).
func TestCrashModelKafka(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("crash cycles are not short")
	}
	br := testkafka.Start(t)
	runCrashModel(t, max(6, crashCycles()/3), "--log", "kafka://"+br.Addr())
}

// crashWriterCount is how many writers the crash tests run.
const crashWriterCount = 3

// crashSetup creates the crash tests' tables through c (and closes it) and
// returns their writers' empty models; writer w writes the keys id ≡ w
// (mod the number of writers).
func crashSetup(c *client) []*crashWriter {
	c.mustExec("CREATE DATABASE crash")
	c.mustExec("CREATE TABLE crash.pk (id BIGINT, v BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')")
	c.mustExec("CREATE TABLE crash.ap (id BIGINT, v BIGINT) WITH ('lakestream.freshness' = '700ms')")
	c.mustExec("CREATE TABLE crash.ppk (id BIGINT, p BIGINT, v BIGINT, PRIMARY KEY (id, p) NOT ENFORCED) PARTITIONED BY (p) WITH ('bucket' = '2')")
	c.close()
	ws := make([]*crashWriter, crashWriterCount)
	for i := range ws {
		ws[i] = &crashWriter{w: i, pk: pkModel{acked: map[pkKey]int64{}}, ppk: pkModel{acked: map[pkKey]int64{}},
			apAcked: map[int64]bool{}, next: int64(i+1) * 1_000_000_000}
	}
	return ws
}

// runCrashModel kills the server cycles times under writers and checks
// the tables against the writers' models after each restart.
func runCrashModel(t *testing.T, cycles int, extra ...string) {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("FLIGHTD_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (replay with FLIGHTD_CRASH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	// Small rounds (--tiering-rows) so that kills also land in capped rounds
	// followed by more, and in the append table's staging between its rounds
	// (its own interval, 700ms, lets the pk table's passes stage it).
	srv := testserver.Start(t, t.TempDir(), append([]string{"--tiering-interval", "300ms", "--tiering-rows", "2000", "--log-level", "info"}, extra...)...)
	warehouse := filepath.Join(srv.DataDir, "warehouse")
	pr := startPaimonReader(t)
	c := connect(t, srv)
	ws := crashSetup(c)
	var inserts atomic.Int64
	for _, w := range ws {
		w.inserts = &inserts
	}
	const writers = crashWriterCount
	var paimonTime time.Duration
	refetched, altered := 0, 0
	jar := javaJarIfBuilt(t)
	paimonChecks := 0
	for cycle := 0; cycle < cycles; cycle++ {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Add(1)
			go func(w *crashWriter, seed uint64) {
				defer wg.Done()
				runCrashWriter(ctx, t, srv, w, writers, seed)
			}(w, rng.Uint64())
		}
		time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
		if inserts.Load() == 0 {
			// Until one INSERT statement query is acknowledged, the kill
			// waits for it: a loaded machine let six cycles pass without
			// one (each writer's first append write is one), leaving the
			// restarts no ticket to fetch again.
			testserver.Eventually(t, 2*time.Minute, func() error {
				if inserts.Load() == 0 {
					return fmt.Errorf("cycle %d: no INSERT statement query acknowledged yet", cycle)
				}
				return nil
			})
		}
		srv.Stop(syscall.SIGKILL)
		cancel()
		wg.Wait()
		// Another engine changes the tables while rows wait in the log:
		// Java Paimon adds a column to each, one third and two thirds in.
		// The rows written before tier under the new schema (NULL there),
		// and the writers' batches without the column are still taken.
		if jar != "" && (cycle == cycles/3 || cycle == 2*cycles/3) {
			tbl := map[bool]string{true: "crash.ap", false: "crash.pk"}[cycle == cycles/3]
			mustJava(t, jar, "alter", warehouse, tbl, fmt.Sprintf("add:c%d:BIGINT", cycle))
			altered++
		}
		srv.Restart(syscall.SIGKILL) // already dead: just starts it again
		refetched += refetchTickets(t, srv, ws)
		c = connect(t, srv)
		where := fmt.Sprintf("cycle %d seed %d", cycle, seed)
		checkCrashModel(t, c, ws, where)
		if pr != nil && (cycle%paimonEvery == 0 || cycle == cycles-1) {
			start := time.Now()
			checkLakeWithPaimon(t, c, pr, warehouse, where, false)
			paimonTime += time.Since(start)
			paimonChecks++
		}
		c.close()
	}
	acked, apAcked := 0, 0
	for _, w := range ws {
		acked += len(w.pk.acked) + len(w.ppk.acked)
		apAcked += len(w.apAcked)
	}
	t.Logf("%d cycles: %d keys and %d append rows acknowledged", cycles, acked, apAcked)
	require.Positive(t, acked, "the writers must have written something")
	t.Logf("%d INSERT tickets fetched again after a restart; %d columns added by Java", refetched, altered)
	require.Positive(t, refetched, "the writers must have sent INSERT statement queries")
	c = connect(t, srv)
	defer c.close()
	testserver.Eventually(t, 60*time.Second, func() error {
		for _, tbl := range []string{"pk", "ap", "ppk"} {
			rt := sortedRows(c.mustQuery(`SELECT * FROM crash."` + tbl + `$rt"`))
			lake := sortedRows(c.mustQuery(`SELECT * FROM crash.` + tbl))
			if strings.Join(rt, ",") != strings.Join(lake, ",") {
				return fmt.Errorf("%s: lake has %d rows, t$rt %d", tbl, len(lake), len(rt))
			}
		}
		return nil
	})
	if pr != nil {
		start := time.Now()
		checkLakeWithPaimon(t, c, pr, warehouse, "after the final drain", true)
		t.Logf("pypaimon agreed with flightd after %d of %d cycles (%s) and after the final drain, every row (%s)",
			paimonChecks, cycles, paimonTime.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	}
}

// paimonEvery: the crash test checks the lake with pypaimon every
// paimonEvery-th cycle (and after the last one).
const paimonEvery = 1

// checkLakeWithPaimon reads the newest snapshot of crash.pk and crash.ap
// with flightd (as crash.pk / crash.ap, bracketed by sys.tiering so the
// snapshot is known) and the same snapshot with pypaimon, and requires the
// same rows: all of them for pk, and for ap when full is set; otherwise
// the count and each column's sum, min, max and distinct count (the append
// table grows to about a million rows).
func checkLakeWithPaimon(t *testing.T, c *client, pr *paimonReader, warehouse, where string, full bool) {
	t.Helper()
	for _, tbl := range []string{"pk", "ap", "ppk"} {
		rows := full || tbl != "ap"
		snapSQL := `SELECT max(snapshot_id) FROM sys.tiering WHERE "database" = 'crash' AND "table" = '` + tbl + `'`
		var snap string
		var want []string
		var flightd *typedResult
		testserver.Eventually(t, 30*time.Second, func() error {
			before := c.scalar(snapSQL)
			if rows {
				flightd = c.mustTyped(`SELECT * FROM crash.` + tbl)
			} else {
				want = c.mustQuery(`SELECT count(*), CAST(sum(id) AS BIGINT), min(id), max(id), count(DISTINCT id), ` +
					`CAST(sum(v) AS BIGINT), min(v), max(v), count(DISTINCT v) FROM crash.` + tbl)[0]
			}
			if after := c.scalar(snapSQL); after != before {
				return fmt.Errorf("crash.%s: snapshot %s became %s while flightd read it", tbl, before, after)
			}
			snap = before
			return nil
		})
		if snap == "NULL" {
			continue // nothing tiered yet
		}
		id, err := strconv.ParseInt(snap, 10, 64)
		require.NoError(t, err, "snapshot id %q", snap)
		mode := "summary"
		if rows {
			mode = "rows"
		}
		ans, err := pr.read(warehouse, "crash."+tbl, id, mode)
		require.NoError(t, err, "%s: crash.%s", where, tbl)
		var got []string
		if rows {
			got = ans.sortedRows()
			// pypaimon reads the snapshot under its own schema, flightd
			// under the newest (Java adds columns between cycles): compare
			// the snapshot's columns.
			var names []string
			require.NoError(t, json.Unmarshal(ans.Columns, &names))
			want = projectRows(t, flightd, names)
		} else {
			got, err = ans.summary("id", "v")
			require.NoError(t, err)
		}
		if rows {
			onlyFlightd, onlyPaimon := rowDiff(want, got, 5)
			require.True(t, len(onlyFlightd)+len(onlyPaimon) == 0,
				"%s: crash.%s snapshot %d: flightd reads %d rows, pypaimon %d; only flightd has (up to 5): %v; only pypaimon has: %v",
				where, tbl, id, len(want), len(got), onlyFlightd, onlyPaimon)
		} else {
			require.Equal(t, want, got, "%s: crash.%s snapshot %d: count, then sum/min/max/distinct of id and v: flightd (want) and pypaimon (got) disagree", where, tbl, id)
		}
	}
}

func runCrashWriter(ctx context.Context, t *testing.T, srv *testserver.Server, w *crashWriter, writers int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(w.w)))
	c, err := tryConnect(srv)
	if err != nil {
		return // the server died before we connected
	}
	defer c.close()
	for ctx.Err() == nil {
		n := 1 + rng.IntN(200)
		ids := make([]int64, n)
		vs := make([]int64, n)
		for i := range ids {
			ids[i] = int64(rng.IntN(300)*writers + w.w)
			vs[i] = w.next
			w.next++
		}
		switch table := rng.IntN(3); table {
		case 0, 1:
			m, name := &w.pk, "pk"
			ps := make([]int64, n)
			if table == 1 {
				m, name = &w.ppk, "ppk"
				for i := range ps {
					ps[i] = int64(rng.IntN(3))
				}
			}
			m.pending = map[pkKey]int64{}
			for i, id := range ids {
				m.pending[pkKey{ps[i], id}] = vs[i] // later rows of a batch win
			}
			var rec arrow.RecordBatch
			if table == 0 {
				rec = kvBatch(ids, vs)
			} else {
				rec = pkvBatch(ids, ps, vs)
			}
			_, err := c.ingest("crash", name, adbc.OptionValueIngestModeAppend, rec)
			rec.Release()
			if err != nil {
				return // leave pending: it may or may not have landed
			}
			for k, v := range m.pending {
				m.acked[k] = v
			}
			m.pending = nil
		default:
			w.apPend = vs
			if w.ticket == nil || rng.IntN(3) == 0 {
				// An INSERT statement query whose ticket is fetched twice
				// (a writer's first append write always is one, so that
				// however few writes a loaded machine lets a cycle make,
				// the restarts have tickets to fetch again).
				if !insertAndFetchTwice(context.Background(), srv, w, ids, vs) { // stopping does not cut a write short
					return
				}
			} else {
				rec := kvBatch(ids, vs)
				_, err := c.ingest("crash", "ap", adbc.OptionValueIngestModeAppend, rec)
				rec.Release()
				if err != nil {
					return
				}
			}
			for _, v := range vs {
				w.apAcked[v] = true
			}
			w.apPend = nil
		}
	}
}

// projectRows renders res's rows with only the named columns, sorted.
func projectRows(t *testing.T, res *typedResult, names []string) []string {
	t.Helper()
	idx := make([]int, len(names))
	for i, n := range names {
		idx[i] = slices.Index(res.names, n)
		require.GreaterOrEqual(t, idx[i], 0, "flightd has no column %q (it has %v)", n, res.names)
	}
	out := make([]string, len(res.rows))
	for r, line := range res.rows {
		cells := strings.Split(line, "|")
		vals := make([]string, len(idx))
		for i, j := range idx {
			vals[i] = cells[j]
		}
		out[r] = strings.Join(vals, "|")
	}
	sort.Strings(out)
	return out
}

// insertAndFetchTwice sends the rows as one INSERT statement query and
// fetches its ticket twice; it reports whether the INSERT was acknowledged
// (its GetFlightInfo answered).
func insertAndFetchTwice(ctx context.Context, srv *testserver.Server, w *crashWriter, ids, vs []int64) bool {
	cl, err := flightsql.NewClient(srv.Addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false
	}
	defer cl.Close()
	var sb strings.Builder
	sb.WriteString("INSERT INTO crash.ap VALUES ")
	for i := range ids {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "(%d, %d)", ids[i], vs[i])
	}
	info, err := cl.Execute(ctx, sb.String())
	if err != nil {
		return false
	}
	w.ticket = info.Endpoint[0].Ticket
	if w.inserts != nil {
		w.inserts.Add(1)
	}
	for range 2 {
		if _, err := fetchCount(ctx, cl, w.ticket); err != nil {
			break // the server died: the INSERT was acknowledged all the same
		}
	}
	return true
}

// fetchCount reads an update ticket's rows_affected.
func fetchCount(ctx context.Context, cl *flightsql.Client, tk *flight.Ticket) (int64, error) {
	r, err := cl.DoGet(ctx, tk)
	if err != nil {
		return 0, err
	}
	defer r.Release()
	n := int64(-1)
	for r.Next() {
		if rec := r.RecordBatch(); rec.NumRows() == 1 {
			if a, ok := rec.Column(0).(*array.Int64); ok {
				n = a.Value(0)
			}
		}
	}
	return n, r.Err()
}

// refetchTickets fetches every writer's last INSERT ticket once more after a
// restart: it answers the count it was issued with and writes nothing (the
// model check that follows finds any row twice).
func refetchTickets(t *testing.T, srv *testserver.Server, ws []*crashWriter) int {
	t.Helper()
	cl, err := flightsql.NewClient(srv.Addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer cl.Close()
	fetched := 0
	for _, w := range ws {
		if w.ticket == nil {
			continue
		}
		n, err := fetchCount(context.Background(), cl, w.ticket)
		require.NoError(t, err, "writer %d: fetch its last INSERT ticket after a restart", w.w)
		require.Positive(t, n, "writer %d: the ticket's row count", w.w)
		fetched++
	}
	return fetched
}

// javaJarIfBuilt is the PaimonCheck jar, or "" (with a log line) when it
// is not built.
func javaJarIfBuilt(t *testing.T) string {
	jar := os.Getenv("PAIMON_CHECK_JAR")
	if jar == "" {
		jar = filepath.Join("java", "target", "paimon-check.jar")
	}
	if _, err := os.Stat(jar); err != nil {
		t.Logf("no Java Paimon (%s): the tables are not altered by another engine", jar)
		return ""
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Log("no java on PATH: the tables are not altered by another engine")
		return ""
	}
	abs, err := filepath.Abs(jar)
	require.NoError(t, err)
	return abs
}

// tryConnect opens an ADBC connection without failing the test.
func tryConnect(srv *testserver.Server) (*client, error) {
	c := &client{t: nil}
	drv := newDriver()
	db, err := drv.NewDatabase(map[string]string{adbc.OptionKeyURI: srv.URI()})
	if err != nil {
		return nil, err
	}
	conn, err := db.Open(context.Background())
	if err != nil {
		db.Close()
		return nil, err
	}
	c.db, c.conn = db, conn
	return c, nil
}

func checkCrashModel(t *testing.T, c *client, ws []*crashWriter, where string) {
	t.Helper()
	checkPKModel(t, c, ws, `SELECT id, 0, v FROM crash."pk$rt"`, func(w *crashWriter) *pkModel { return &w.pk }, where+": pk")
	checkPKModel(t, c, ws, `SELECT id, p, v FROM crash."ppk$rt"`, func(w *crashWriter) *pkModel { return &w.ppk }, where+": ppk")

	count := map[int64]int{}
	for _, r := range c.mustQuery(`SELECT v FROM crash."ap$rt"`) {
		v, _ := strconv.ParseInt(r[0], 10, 64)
		count[v]++
	}
	for v, n := range count {
		require.Equal(t, 1, n, "%s: append row v=%d appears %d times", where, v, n)
	}
	for _, w := range ws {
		for v := range w.apAcked {
			require.Equal(t, 1, count[v], "%s: writer %d lost acknowledged append row v=%d", where, w.w, v)
		}
		if len(w.apPend) > 0 {
			landed := 0
			for _, v := range w.apPend {
				landed += count[v]
			}
			require.True(t, landed == 0 || landed == len(w.apPend), "%s: writer %d: %d of %d in-flight append rows landed", where, w.w, landed, len(w.apPend))
			if landed > 0 {
				for _, v := range w.apPend {
					w.apAcked[v] = true
				}
			}
			w.apPend = nil
		}
	}
	total := 0
	for _, w := range ws {
		total += len(w.apAcked)
	}
	require.Equal(t, total, len(count), "%s: append table has rows nobody wrote", where)
}

// checkPKModel compares a primary-key table's t$rt (sql reads id, p, v)
// with the writers' models of it.
func checkPKModel(t *testing.T, c *client, ws []*crashWriter, sql string, model func(*crashWriter) *pkModel, where string) {
	t.Helper()
	got := map[pkKey]int64{}
	for _, r := range c.mustQuery(sql) {
		id, _ := strconv.ParseInt(r[0], 10, 64)
		p, _ := strconv.ParseInt(r[1], 10, 64)
		v, _ := strconv.ParseInt(r[2], 10, 64)
		k := pkKey{p, id}
		_, dup := got[k]
		require.False(t, dup, "%s: key %v twice", where, k)
		got[k] = v
	}
	for _, w := range ws {
		m := model(w)
		for k, v := range m.acked {
			if p, ok := m.pending[k]; ok && got[k] == p {
				continue
			}
			require.Equal(t, v, got[k], "%s: writer %d key %v lost its acknowledged version", where, w.w, k)
		}
		// The in-flight batch landed entirely or not at all.
		if len(m.pending) > 0 {
			landed := 0
			for k, v := range m.pending {
				if got[k] == v {
					landed++
				}
			}
			require.True(t, landed == 0 || landed == len(m.pending), "%s: writer %d: %d of %d keys of the in-flight batch landed", where, w.w, landed, len(m.pending))
			if landed > 0 {
				for k, v := range m.pending {
					m.acked[k] = v
				}
			}
			m.pending = nil
		}
	}
	for k := range got {
		_, ok := model(ws[int(k.id)%len(ws)]).acked[k]
		require.True(t, ok, "%s: key %v in t$rt was never written", where, k)
	}
}

// rowDiff compares two sorted row lists as multisets and returns up to n
// rows only a has and up to n rows only b has.
func rowDiff(a, b []string, n int) (onlyA, onlyB []string) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			if len(onlyA) < n {
				onlyA = append(onlyA, a[i])
			}
			i++
		case i == len(a) || b[j] < a[i]:
			if len(onlyB) < n {
				onlyB = append(onlyB, b[j])
			}
			j++
		default:
			i++
			j++
		}
	}
	return onlyA, onlyB
}
