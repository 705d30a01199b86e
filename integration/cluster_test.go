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

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/flightd/flightd/internal/testkafka"
	"github.com/flightd/flightd/internal/testserver"
	s3fio "github.com/flightd/flightd/lake/fileio/s3"
)

// startNodes starts n flightd nodes over one Kafka broker and one warehouse
// directory (the shared store: exclusive creates by link, as S3's
// If-None-Match), each with its own data directory.
func startNodes(t *testing.T, n int, extra ...string) (nodes []*testserver.Server, warehouse string) {
	t.Helper()
	warehouse = filepath.Join(t.TempDir(), "warehouse")
	require.NoError(t, os.MkdirAll(warehouse, 0o755))
	return startNodesOn(t, n, warehouse, extra...), warehouse
}

// s3Cluster is a warehouse on a Versity S3 Gateway, for nodes and for
// Paimon's readers.
type s3Cluster struct {
	endpoint, warehouse string
	flags               []string
}

// startS3 starts Versity and makes a bucket for a cluster's warehouse.
func startS3(t *testing.T) s3Cluster {
	t.Helper()
	endpoint, _ := testserver.StartVersityGW(t)
	const bucket = "flightd-cluster"
	fio, err := s3fio.New(context.Background(), bucket, s3fio.Options{Endpoint: endpoint, Region: testserver.S3Region,
		AccessKeyID: testserver.S3AccessKey, SecretAccessKey: testserver.S3SecretKey})
	require.NoError(t, err)
	_, err = fio.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	testserver.Setenv(t, "FLIGHTD_S3_SECRET_ACCESS_KEY", testserver.S3SecretKey)
	wh := "s3://" + bucket + "/lake"
	return s3Cluster{endpoint: endpoint, warehouse: wh, flags: []string{"--warehouse", wh, "--s3-endpoint", endpoint,
		"--s3-access-key-id", testserver.S3AccessKey, "--s3-region", testserver.S3Region, "--s3-path-style", "true"}}
}

// pypaimonOptions are the catalog options pypaimon reads the S3 warehouse with.
func (s s3Cluster) pypaimonOptions() map[string]string {
	return map[string]string{"fs.s3.endpoint": s.endpoint, "fs.s3.accessKeyId": testserver.S3AccessKey,
		"fs.s3.accessKeySecret": testserver.S3SecretKey, "fs.s3.region": testserver.S3Region}
}

// startNodesOn starts n nodes over one Kafka broker and the warehouse
// (a directory, or an s3:// URL with its flags in extra).
func startNodesOn(t *testing.T, n int, warehouse string, extra ...string) (nodes []*testserver.Server) {
	t.Helper()
	nodes, _ = startNodesWith(t, testkafka.Start(t), n, warehouse, extra...)
	return nodes
}

// startNodesWith starts n nodes over the broker and the warehouse.
func startNodesWith(t *testing.T, br *testkafka.Broker, n int, warehouse string, extra ...string) (nodes []*testserver.Server, _ *testkafka.Broker) {
	t.Helper()
	for i := range n {
		args := append([]string{"--log", "kafka://" + br.Addr(), "--kafka-topic-prefix", "cl.", "--warehouse", warehouse,
			"--node-id", fmt.Sprintf("n%d", i+1), "--cluster-session-timeout", "6s", "--kafka-timeout", "6s", "--log-level", "info"}, extra...)
		nodes = append(nodes, testserver.Start(t, t.TempDir(), args...))
	}
	return nodes, br
}

// TestClusterNodes: three nodes over one warehouse and one Kafka log. Any
// node takes DDL and writes; a write acknowledged by one is in the next
// t$rt read on every other; DDL on one is seen by the next statement on
// another; the tables are tiered (by whichever node owns each) and the
// lake is read the same on every node.
func TestClusterNodes(t *testing.T) {
	t.Parallel() // waits on brokers and sessions, mostly: beside another cluster test
	nodes, _ := startNodes(t, 3, "--tiering-interval", "300ms")
	cs := make([]*client, len(nodes))
	for i, n := range nodes {
		cs[i] = connect(t, n)
	}
	cs[0].mustExec("CREATE TABLE kv (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')")
	cs[1].mustExec("CREATE TABLE ev (id BIGINT, what STRING)")
	require.Equal(t, "0", cs[2].scalar(`SELECT count(*) FROM "kv$rt"`), "a table made on n1 is there on n3")
	// A streaming read on n3 sees the writes of every node.
	next := streamOn(t, nodes[2], `SELECT id, v FROM "kv$rt"`)
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
	// The stream's changes, folded, end at the same rows.
	streamed := map[string]string{}
	for len(streamed) != len(model) || !sameAsModel(streamed, model) {
		change := strings.SplitN(next(), "|", 3)
		require.Len(t, change, 3, "a change: kind|id|v")
		switch change[0] {
		case "+I", "+U":
			streamed[change[1]] = change[2]
		case "-U", "-D":
			delete(streamed, change[1])
		}
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

// streamOn starts a streaming read of sql on srv (SET streaming = true)
// and returns a function that reads its next row, as kind|col|col.
func streamOn(t *testing.T, srv *testserver.Server, sql string) func() string {
	t.Helper()
	db, err := newDriver().NewDatabase(map[string]string{adbc.OptionKeyURI: srv.URI(),
		adbcflight.OptionCookieMiddleware: adbc.OptionValueEnabled})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	conn, err := db.Open(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	sc := &client{t: t, conn: conn}
	_, err = sc.query("SET streaming = true")
	require.NoError(t, err)
	st, err := conn.NewStatement()
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	require.NoError(t, st.SetSqlQuery(sql))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	rr, _, err := st.ExecuteQuery(ctx)
	require.NoError(t, err)
	t.Cleanup(rr.Release)
	var pending []string
	return func() string {
		for len(pending) == 0 {
			require.True(t, rr.Next(), "the stream ended: %v", rr.Err())
			rec := rr.RecordBatch()
			for i := 0; i < int(rec.NumRows()); i++ {
				var row []string
				for j := 0; j < int(rec.NumCols()); j++ {
					row = append(row, rec.Column(j).ValueStr(i))
				}
				pending = append(pending, strings.Join(row, "|"))
			}
		}
		r := pending[0]
		pending = pending[1:]
		return r
	}
}

func sameAsModel(streamed map[string]string, model map[int]string) bool {
	for id, v := range model {
		if streamed[strconv.Itoa(id)] != v {
			return false
		}
	}
	return true
}

func sortStrings(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// TestClusterKillLoop: on a Versity S3 warehouse, writers spread over three
// nodes while a random node
// is SIGKILLed (often in the middle of a tiering round it owns, so another
// node takes its tables) and started again, cycle after cycle. After every
// cycle, t$rt on every node equals the writers' model: nothing
// acknowledged lost or doubled, a write cut short by the kill all or
// nothing; at the end the lake equals it too, and pypaimon and Java Paimon
// read the final snapshots equal to flightd. $FLIGHTD_CRASH_CYCLES cycles (default 20,
// make soak more).
func TestClusterKillLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("kill cycles are not short")
	}
	t.Parallel() // waits on brokers, S3 and restarts, mostly: beside other tests
	cycles := crashCycles()
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("FLIGHTD_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (replay with FLIGHTD_CRASH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	s3c := startS3(t)
	nodes := startNodesOn(t, 3, s3c.warehouse, append([]string{"--tiering-interval", "300ms", "--tiering-rows", "2000"}, s3c.flags...)...)
	pr := startPaimonReader(t)
	if pr != nil {
		pr.options = s3c.pypaimonOptions()
	}
	c := connect(t, nodes[0])
	ws := crashSetup(c)
	const writers = crashWriterCount
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
		checkLakeWithPaimon(t, cs[0], pr, s3c.warehouse, "after the final drain", true)
	}
	// Java Paimon reads the same lake.
	if jar := javaJarIfBuilt(t); jar != "" {
		ops := []string{"read:crash.pk", "read:crash.ppk", "read:crash.ap"}
		res := javaS3(t, jar, s3c.endpoint, s3c.warehouse, ops...)
		for i, tbl := range []string{"pk", "ppk", "ap"} {
			cols := []string{"id", "v"}
			if tbl == "ppk" {
				cols = []string{"id", "p", "v"}
			}
			var java []string
			for _, row := range res.rows[i] {
				var vals []string
				for _, c := range cols {
					vals = append(vals, fmt.Sprint(row[c]))
				}
				java = append(java, strings.Join(vals, "|"))
			}
			sort.Strings(java)
			want := sortedRows(cs[0].mustQuery("SELECT " + strings.Join(cols, ", ") + " FROM crash." + tbl))
			require.Equal(t, len(want), len(java), "crash.%s: Java Paimon reads %d rows, flightd %d", tbl, len(java), len(want))
			require.Equal(t, want, java, "crash.%s: Java Paimon and flightd read the same lake", tbl)
		}
	}
}

// TestClusterCutOffFromKafka: while the brokers are down, writes on every
// node fail with UNAVAILABLE naming them and the lake is still served;
// when they return, the nodes rejoin on their own: writes are taken again
// on every node and tiered, and nothing acknowledged is lost. A node that
// starts while they are down serves the lake and joins when they return.
func TestClusterCutOffFromKafka(t *testing.T) {
	t.Parallel() // waits on brokers and sessions, mostly: beside another cluster test
	warehouse := filepath.Join(t.TempDir(), "warehouse")
	require.NoError(t, os.MkdirAll(warehouse, 0o755))
	br := testkafka.Start(t)
	nodes, _ := startNodesWith(t, br, 2, warehouse, "--tiering-interval", "300ms", "--kafka-timeout", "3s")
	a, b := connect(t, nodes[0]), connect(t, nodes[1])
	a.mustExec("CREATE TABLE kv (id BIGINT, customer STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	a.mustExec("INSERT INTO kv VALUES (1, 'a')")
	b.mustExec("INSERT INTO kv VALUES (2, 'b')")
	testserver.Eventually(t, 60*time.Second, func() error {
		if got := b.scalar("SELECT count(*) FROM kv"); got != "2" {
			return fmt.Errorf("the lake holds %s rows", got)
		}
		return nil
	})

	br.Stop()
	var wg sync.WaitGroup
	for i, c := range []*client{a, b} {
		wg.Go(func() { // both nodes at once: each waits out --kafka-timeout
			_, err := c.exec(fmt.Sprintf("INSERT INTO kv VALUES (%d, 'x')", 10+i))
			assert.Error(t, err, "n%d writes with the brokers down", i+1)
			assert.Equal(t, codes.Unavailable, grpcCode(err), "n%d: %v", i+1, err)
			assert.ErrorContains(t, err, br.Addr(), "n%d: the error names the brokers", i+1)
			rows, err := c.query(`SELECT id, customer FROM kv`)
			assert.NoError(t, err, "n%d serves the lake", i+1)
			assert.Equal(t, "1|a,2|b", strings.Join(sortedRows(rows), ","), "n%d serves the lake", i+1)
			_, err = c.query(`SELECT * FROM "kv$rt"`)
			assert.Error(t, err, "n%d cannot know what the other node acknowledged", i+1)
			assert.Equal(t, codes.Unavailable, grpcCode(err), "n%d: t$rt fails UNAVAILABLE, not as an invalid statement: %v", i+1, err)
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	br.Restart(t)
	for i, c := range []*client{a, b} {
		testserver.Eventually(t, 2*time.Minute, func() error {
			_, err := c.exec(fmt.Sprintf("INSERT INTO kv VALUES (%d, 'n%d')", 20+i, i+1))
			return err
		})
	}
	acked := []string{"1|a", "2|b", "20|n1", "21|n2"}
	testserver.Eventually(t, 2*time.Minute, func() error {
		if got := a.idCustomer("kv"); !isSubset(acked, got) {
			return fmt.Errorf("the lake holds %v", got)
		}
		return nil
	})
	for i, c := range []*client{a, b} {
		require.Subset(t, c.idCustomer(`"kv$rt"`), acked, "n%d: nothing acknowledged lost", i+1)
	}

	// A node that starts while the brokers are down serves the lake,
	// says it is not a member yet, and joins once they return.
	br.Stop()
	a.close()
	nodes[0].Restart(syscall.SIGKILL)
	a = connect(t, nodes[0])
	require.Subset(t, a.idCustomer("kv"), []string{"1|a", "2|b"}, "the lake is served")
	require.Equal(t, [][]string{{"false"}}, a.mustQuery("SELECT ready FROM sys.nodes WHERE is_self"))
	br.Restart(t)
	testserver.Eventually(t, 2*time.Minute, func() error {
		if got := a.scalar("SELECT ready FROM sys.nodes WHERE is_self"); got != "true" {
			return fmt.Errorf("n1 is not a member yet (ready %s)", got)
		}
		_, err := a.exec("INSERT INTO kv VALUES (30, 'late')")
		return err
	})
	testserver.Eventually(t, 2*time.Minute, func() error {
		if got := b.idCustomer("kv"); !isSubset(append(acked, "30|late"), got) {
			return fmt.Errorf("the lake holds %v", got)
		}
		return nil
	})
}

func isSubset(want, got []string) bool {
	have := map[string]bool{}
	for _, g := range got {
		have[g] = true
	}
	for _, w := range want {
		if !have[w] {
			return false
		}
	}
	return true
}
