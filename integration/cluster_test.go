package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testkafka"
	"github.com/flightd/flightd/internal/testserver"
)

// startNodes starts n flightd nodes over one Kafka broker and one warehouse
// directory (the shared store: exclusive creates by link, as S3's
// If-None-Match), each with its own data directory.
func startNodes(t *testing.T, n int, extra ...string) (nodes []*testserver.Server, warehouse string) {
	t.Helper()
	br := testkafka.Start(t)
	warehouse = filepath.Join(t.TempDir(), "warehouse")
	require.NoError(t, os.MkdirAll(warehouse, 0o755))
	for i := range n {
		args := append([]string{"--log", "kafka://" + br.Addr(), "--kafka-topic-prefix", "cl.", "--warehouse", warehouse,
			"--node-id", fmt.Sprintf("n%d", i+1), "--cluster-session-timeout", "6s", "--kafka-timeout", "6s", "--log-level", "info"}, extra...)
		nodes = append(nodes, testserver.Start(t, t.TempDir(), args...))
	}
	return nodes, warehouse
}

// TestClusterNodes: three nodes over one warehouse and one Kafka log. Any
// node takes DDL and writes; a write acknowledged by one is in the next
// t$rt read on every other; DDL on one is seen by the next statement on
// another; the tables are tiered (by whichever node owns each) and the
// lake is read the same on every node.
func TestClusterNodes(t *testing.T) {
	nodes, _ := startNodes(t, 3, "--tiering-interval", "300ms")
	cs := make([]*client, len(nodes))
	for i, n := range nodes {
		cs[i] = connect(t, n)
	}
	cs[0].mustExec("CREATE TABLE kv (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')")
	cs[1].mustExec("CREATE TABLE ev (id BIGINT, what STRING)")
	require.Equal(t, "0", cs[2].scalar(`SELECT count(*) FROM "kv$rt"`), "a table made on n1 is there on n3")
	model := map[int]string{}
	for i := range 30 {
		w := cs[i%3]
		v := fmt.Sprintf("v%d", i)
		w.mustExec(fmt.Sprintf("INSERT INTO kv VALUES (%d, '%s'), (%d, '%s')", i%7, v, 100+i, v))
		model[i%7], model[100+i] = v, v
		w.mustExec(fmt.Sprintf("INSERT INTO ev VALUES (%d, 'x')", i))
		for j, r := range cs {
			// Acknowledged by node i%3: read at once on every node.
			got, err := r.query(fmt.Sprintf(`SELECT v FROM "kv$rt" WHERE id = %d`, i%7))
			require.NoError(t, err)
			if len(got) != 1 {
				t.Log(nodes[j].Log())
			}
			require.Equal(t, [][]string{{v}}, got, "write %d on n%d read on n%d", i, i%3+1, j+1)
			require.Equal(t, strconv.Itoa(i+1), r.scalar(`SELECT count(*) FROM "ev$rt"`), "write %d on n%d read on n%d", i, i%3+1, j+1)
		}
	}
	var want []string
	for id, v := range model {
		want = append(want, fmt.Sprintf("%d|%s", id, v))
	}
	wantRows := strings.Join(sortStrings(want), ",")
	for j, r := range cs {
		require.Equal(t, wantRows, strings.Join(sortedRows(r.mustQuery(`SELECT id, v FROM "kv$rt"`)), ","), "kv$rt on n%d", j+1)
	}
	// DDL on one node, the next statement on another.
	cs[2].mustExec("ALTER TABLE kv ADD COLUMN w BIGINT")
	cs[0].mustExec("INSERT INTO kv VALUES (1000, 'z', 7)")
	require.Equal(t, "7", cs[1].scalar(`SELECT w FROM "kv$rt" WHERE id = 1000`))
	model[1000] = "z"
	want = append(want, "1000|z")
	wantRows = strings.Join(sortStrings(want), ",")

	// The lake catches up, tiered by whichever node owns each table, and
	// reads the same everywhere.
	testserver.Eventually(t, 90*time.Second, func() error {
		for j, r := range cs {
			if got := strings.Join(sortedRows(r.mustQuery(`SELECT id, v FROM kv`)), ","); got != wantRows {
				return fmt.Errorf("n%d: the lake holds %d of %d rows of kv", j+1, strings.Count(got, ",")+1, len(want))
			}
			if got := r.scalar("SELECT count(*) FROM ev"); got != "30" {
				return fmt.Errorf("n%d: the lake holds %s of 30 rows of ev", j+1, got)
			}
		}
		return nil
	})
	for j, r := range cs {
		require.Equal(t, wantRows, strings.Join(sortedRows(r.mustQuery(`SELECT id, v FROM "kv$rt"`)), ","), "kv$rt on n%d after tiering", j+1)
	}

	cs[1].mustExec("DROP TABLE ev")
	_, err := cs[0].query(`SELECT count(*) FROM "ev$rt"`)
	require.Error(t, err, "a table dropped on n2 is gone on n1")
	cs[0].mustExec("CREATE TABLE ev (id BIGINT, what STRING)")
	require.Equal(t, "0", cs[2].scalar(`SELECT count(*) FROM "ev$rt"`), "made again on n1: empty on n3")
}

func sortStrings(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// TestClusterKillLoop: writers spread over three nodes while a random node
// is SIGKILLed (often in the middle of a tiering round it owns, so another
// node takes its tables) and started again, cycle after cycle. After every
// cycle, t$rt on every node equals the writers' model: nothing
// acknowledged lost or doubled, a write cut short by the kill all or
// nothing; at the end the lake equals it too, and pypaimon reads the final
// snapshots equal to flightd. $FLIGHTD_CRASH_CYCLES cycles (default 20,
// make soak more).
func TestClusterKillLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("kill cycles are not short")
	}
	cycles := crashCycles()
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("FLIGHTD_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (replay with FLIGHTD_CRASH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	nodes, warehouse := startNodes(t, 3, "--tiering-interval", "300ms", "--tiering-rows", "2000")
	pr := startPaimonReader(t)
	c := connect(t, nodes[0])
	c.mustExec("CREATE DATABASE crash")
	c.mustExec("CREATE TABLE crash.pk (id BIGINT, v BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')")
	c.mustExec("CREATE TABLE crash.ap (id BIGINT, v BIGINT) WITH ('lakestream.freshness' = '700ms')")
	c.mustExec("CREATE TABLE crash.ppk (id BIGINT, p BIGINT, v BIGINT, PRIMARY KEY (id, p) NOT ENFORCED) PARTITIONED BY (p) WITH ('bucket' = '2')")
	c.close()

	const writers = 3
	ws := make([]*crashWriter, writers)
	for i := range ws {
		ws[i] = &crashWriter{w: i, pk: pkModel{acked: map[pkKey]int64{}}, ppk: pkModel{acked: map[pkKey]int64{}},
			apAcked: map[int64]bool{}, next: int64(i+1) * 1_000_000_000}
	}
	refetched := 0
	for cycle := range cycles {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, w := range ws {
			srv := nodes[rng.IntN(len(nodes))]
			wg.Go(func() { runCrashWriter(ctx, t, srv, w, writers, rng.Uint64()) })
		}
		time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
		victim := rng.IntN(len(nodes))
		nodes[victim].Stop(syscall.SIGKILL)
		cancel() // the others finish the write they are in
		wg.Wait()
		nodes[victim].Restart(syscall.SIGKILL) // already dead: just starts it again
		where := fmt.Sprintf("cycle %d (n%d killed) seed %d", cycle, victim+1, seed)
		// Any node serves any ticket: fetch the writers' last INSERT
		// tickets again on a node that may not have issued them.
		refetched += refetchTickets(t, nodes[rng.IntN(len(nodes))], ws)
		for j, n := range nodes {
			c := connect(t, n)
			checkCrashModel(t, c, ws, fmt.Sprintf("%s, read on n%d", where, j+1))
			c.close()
		}
	}
	acked, apAcked := 0, 0
	for _, w := range ws {
		acked += len(w.pk.acked) + len(w.ppk.acked)
		apAcked += len(w.apAcked)
	}
	t.Logf("%d cycles: %d keys and %d append rows acknowledged; %d tickets fetched again on another node", cycles, acked, apAcked, refetched)
	require.Positive(t, acked, "the writers must have written something")
	cs := make([]*client, len(nodes))
	for i, n := range nodes {
		cs[i] = connect(t, n)
	}
	testserver.Eventually(t, 120*time.Second, func() error {
		for j, c := range cs {
			for _, tbl := range []string{"pk", "ap", "ppk"} {
				rt := sortedRows(c.mustQuery(`SELECT * FROM crash."` + tbl + `$rt"`))
				lake := sortedRows(c.mustQuery(`SELECT * FROM crash.` + tbl))
				if strings.Join(rt, ",") != strings.Join(lake, ",") {
					return fmt.Errorf("n%d: %s: lake has %d rows, t$rt %d", j+1, tbl, len(lake), len(rt))
				}
			}
		}
		return nil
	})
	if pr != nil {
		checkLakeWithPaimon(t, cs[0], pr, warehouse, "after the final drain", true)
	}
}
