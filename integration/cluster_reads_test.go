package integration

// Reads across nodes: in a cluster, a result of several endpoints names a
// live node in each endpoint's locations (with
// arrow-flight-reuse-connection://?), and any node serves any ticket. The
// real drivers (Go ADBC, Python ADBC with pyarrow, the Flight SQL JDBC
// driver) follow the locations and read the whole result; a node that is
// named but down costs them a failed connection, after which they fall
// back to the connection they have.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	flightsqlclient "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/cluster"
	"github.com/flightd/flightd/internal/testkafka"
	"github.com/flightd/flightd/internal/testserver"
)

// readSum is a result as the read checks see it: its rows and the sum (mod
// 2^64) of the CRC-32 of each row's values joined by "|" (NULL for a null),
// which does not depend on the order of the rows.
type readSum struct {
	Rows     int64  `json:"rows"`
	Checksum string `json:"checksum"`
}

func sumRows(rows [][]string) readSum {
	var s uint64
	for _, r := range rows {
		s += uint64(crc32.ChecksumIEEE([]byte(strings.Join(r, "|"))))
	}
	return readSum{Rows: int64(len(rows)), Checksum: strconv.FormatUint(s, 10)}
}

func (a readSum) plus(b readSum) readSum {
	x, _ := strconv.ParseUint(a.Checksum, 10, 64)
	y, _ := strconv.ParseUint(b.Checksum, 10, 64)
	return readSum{Rows: a.Rows + b.Rows, Checksum: strconv.FormatUint(x+y, 10)}
}

// readCluster is a three-node cluster for the read tests, each node with
// its metrics on an address of its own.
type readCluster struct {
	broker  *testkafka.Broker
	nodes   []*testserver.Server
	metrics []string
}

// startReadCluster is startNodes with --max-endpoints 3, parts of at least
// 1000 rows, a session timeout of 20 s (a dead node stays in the cluster's
// list for three of them, well past the 3 s after which flightd stops
// naming it), and /metrics on each node; node i over dataDirs[i].
func startReadCluster(t *testing.T, dataDirs []string, extra ...string) *readCluster {
	t.Helper()
	rc := &readCluster{broker: testkafka.Start(t)}
	warehouse := filepath.Join(t.TempDir(), "warehouse")
	require.NoError(t, os.MkdirAll(warehouse, 0o755))
	for i, dir := range dataDirs {
		m := freeAddr(t)
		rc.metrics = append(rc.metrics, m)
		rc.nodes = append(rc.nodes, testserver.Start(t, dir, append([]string{"--log", "kafka://" + rc.broker.Addr(), "--kafka-topic-prefix", "cl.", "--warehouse", warehouse,
			"--node-id", fmt.Sprintf("n%d", i+1), "--cluster-session-timeout", "20s", "--kafka-timeout", "6s", "--log-level", "info",
			"--max-endpoints", "3", "--min-endpoint-rows", "1000", "--tiering-interval", "300ms", "--metrics-addr", m}, extra...)...))
	}
	return rc
}

// doGets are the DoGets each node answered OK so far (a node that is down
// counts 0).
func (rc *readCluster) doGets(t *testing.T) []float64 {
	t.Helper()
	return rc.doGetsAnswered(t, "OK")
}

// doGetsAnswered are the DoGets each node answered with code so far.
func (rc *readCluster) doGetsAnswered(t *testing.T, code string) []float64 {
	t.Helper()
	out := make([]float64, len(rc.nodes))
	for i, n := range rc.nodes {
		if n.Exited() {
			continue
		}
		for series, v := range scrape(t, rc.metrics[i]) {
			// Whatever other labels the series has (a node's id).
			if strings.HasPrefix(series, "flightd_rpc_duration_seconds_count{") && strings.Contains(series, `code="`+code+`"`) && strings.Contains(series, `method="DoGet"`) {
				out[i] += v
			}
		}
	}
	return out
}

// rawClient is a Flight SQL client of one node that follows no locations.
func rawClient(t *testing.T, s *testserver.Server) *flightsqlclient.Client {
	t.Helper()
	cl, err := flightsqlclient.NewClient(s.Addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return cl
}

// readTicket reads one ticket through cl.
func readTicket(cl *flightsqlclient.Client, tkt *flight.Ticket) (readSum, error) {
	r, err := cl.DoGet(context.Background(), tkt)
	if err != nil {
		return readSum{}, err
	}
	defer r.Release()
	rows, err := rowsOf(r)
	return sumRows(rows), err
}

// namedNodes is the node each endpoint names first (the reuse-connection
// stands for the node that answered), and checks that every endpoint
// names the reuse-connection too.
func namedNodes(t *testing.T, info *flight.FlightInfo, self string) []string {
	t.Helper()
	var out []string
	for i, ep := range info.Endpoint {
		var uris []string
		for _, l := range ep.Location {
			uris = append(uris, l.GetUri())
		}
		require.Contains(t, uris, flight.LocationReuseConnection, "endpoint %d: %v", i, uris)
		node := uris[0]
		if node == flight.LocationReuseConnection {
			node = self
			require.Equal(t, []string{flight.LocationReuseConnection, self}, uris, "endpoint %d of the node that answered", i)
		} else {
			require.Equal(t, []string{node, flight.LocationReuseConnection, self}, uris, "endpoint %d of another node", i)
		}
		out = append(out, node)
	}
	return out
}

func distinct(s []string) map[string]bool {
	out := map[string]bool{}
	for _, v := range s {
		out[v] = true
	}
	return out
}

// A driver reads sql on the node at uri (host:port addr) reads times and
// returns each read's sum.
type driver struct {
	name string
	read func(t *testing.T, uri, addr, sql string, reads int) []readSum
}

func goADBCRead(t *testing.T, uri, _, sql string, reads int) []readSum {
	t.Helper()
	return goADBCReadWith(t, map[string]string{adbc.OptionKeyURI: uri}, sql, reads)
}

// goADBCReadWith is goADBCRead with the database options opts.
func goADBCReadWith(t *testing.T, opts map[string]string, sql string, reads int) []readSum {
	t.Helper()
	db, err := newDriver().NewDatabase(opts)
	require.NoError(t, err)
	defer db.Close()
	conn, err := db.Open(context.Background())
	require.NoError(t, err)
	defer conn.Close()
	var out []readSum
	for range reads {
		st, err := conn.NewStatement()
		require.NoError(t, err)
		require.NoError(t, st.SetSqlQuery(sql))
		r, _, err := st.ExecuteQuery(context.Background())
		require.NoError(t, err, "Go ADBC: %s", sql)
		rows, err := rowsOf(r)
		r.Release()
		require.NoError(t, err, "Go ADBC: %s", sql)
		require.NoError(t, st.Close())
		out = append(out, sumRows(rows))
	}
	return out
}

// python is the interpreter of the Python driver checks: $FLIGHTD_PYTHON,
// or the repository's .venv (make py-deps); "" when there is none.
func python() string {
	if p := os.Getenv("FLIGHTD_PYTHON"); p != "" {
		return p
	}
	p, _ := filepath.Abs(filepath.Join("..", ".venv", "bin", "python"))
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

func runPython(t *testing.T, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python(), append([]string{filepath.Join("python", "cluster_read.py")}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "cluster_read.py %v:\n%s\n%s", args[:2], stdout.String(), stderr.String())
	return stdout.Bytes()
}

func pythonADBCRead(t *testing.T, uri, _, sql string, reads int) []readSum {
	t.Helper()
	out := runPython(t, "adbc", uri, sql, strconv.Itoa(reads))
	var sums []readSum
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var s readSum
		require.NoError(t, json.Unmarshal(sc.Bytes(), &s), "cluster_read.py: %s", out)
		sums = append(sums, s)
	}
	return sums
}

// jdbcDir is where JdbcRead and the driver are (`make jdbc-check-jar`);
// "" when they are not, or there is no java.
func jdbcDir() string {
	dir := os.Getenv("JDBC_CHECK_DIR")
	if dir == "" {
		dir = filepath.Join("jdbc", "target")
	}
	dir, _ = filepath.Abs(dir)
	if _, err := os.Stat(filepath.Join(dir, "jdbc-check.jar")); err != nil {
		return ""
	}
	if _, err := exec.LookPath("java"); err != nil {
		return ""
	}
	return dir
}

// jdbcRead reads with the driver in lib, a directory of jdbcDir: lib (the
// driver release JdbcCheck is built with) or lib-17.0.0 (an older one,
// which tools still ship).
func jdbcRead(lib string) func(t *testing.T, _, addr, sql string, reads int) []readSum {
	return func(t *testing.T, _, addr, sql string, reads int) []readSum {
		t.Helper()
		return jdbcReadWith(t, lib, addr, sql, reads)
	}
}

// jdbcReadWith runs JdbcRead with the driver in lib and the JDBC URL's
// parameters when given.
func jdbcReadWith(t *testing.T, lib, addr, sql string, reads int, urlParams ...string) []readSum {
	t.Helper()
	dir := jdbcDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp := filepath.Join(dir, "jdbc-check.jar") + string(os.PathListSeparator) + filepath.Join(dir, lib, "*")
	cmd := exec.CommandContext(ctx, "java", "--add-opens=java.base/java.nio=ALL-UNNAMED", "-Duser.timezone=UTC",
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cp, "JdbcRead", addr, sql, strconv.Itoa(reads))
	cmd.Args = append(cmd.Args, urlParams...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "JdbcRead (%s):\n%s\n%s", lib, stdout.String(), stderr.String())
	var sums []readSum
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var s readSum
		_, err := fmt.Sscanf(line, "rows %d checksum %s", &s.Rows, &s.Checksum)
		require.NoError(t, err, "JdbcRead line %q", line)
		sums = append(sums, s)
	}
	return sums
}

// drivers are the drivers present: Go ADBC always; Python ADBC and JDBC
// (the current release and 17.0.0) when installed (a missing one is reported, and fails the test under
// $FLIGHTD_REQUIRE_DRIVERS=1).
func drivers(t *testing.T) []driver {
	ds := []driver{{"Go ADBC", goADBCRead}}
	missing := func(what string) {
		if os.Getenv("FLIGHTD_REQUIRE_DRIVERS") == "1" {
			t.Fatalf("%s", what)
		}
		t.Logf("NOT CHECKED: %s", what)
	}
	if python() == "" {
		missing("the Python ADBC driver: no $FLIGHTD_PYTHON nor ../.venv (make py-deps)")
	} else {
		ds = append(ds, driver{"Python ADBC", pythonADBCRead})
	}
	if jdbcDir() == "" {
		missing("the JDBC driver: jdbc/target/jdbc-check.jar is not built (make jdbc-check-jar) or no java")
	} else {
		ds = append(ds, driver{"JDBC", jdbcRead("lib")})
		if _, err := os.Stat(filepath.Join(jdbcDir(), "lib-17.0.0")); err == nil {
			ds = append(ds, driver{"JDBC 17.0.0", jdbcRead("lib-17.0.0")})
		} else {
			missing("the JDBC driver 17.0.0: jdbc/target/lib-17.0.0 is not there (make jdbc-check-jar)")
		}
	}
	return ds
}

// kvTable is r.kv, a primary-key table of six buckets, and the rows the
// test wrote to it.
type kvTable struct {
	t     *testing.T
	model map[int64]string
}

func newKV(t *testing.T, c *client) *kvTable {
	c.mustExec("CREATE DATABASE r")
	c.mustExec("CREATE TABLE r.kv (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '6')")
	return &kvTable{t: t, model: map[int64]string{}}
}

var readKVSchema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String}}, nil)

// write upserts the rows [from, to) through c.
func (kv *kvTable) write(c *client, from, to int64, tag string) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, readKVSchema)
	defer b.Release()
	for id := from; id < to; id++ {
		v := fmt.Sprintf("%s%d-%s", tag, id, strings.Repeat("x", int(id%13)))
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(v)
		kv.model[id] = v
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	_, err := c.ingest("r", "kv", adbc.OptionValueIngestModeAppend, rec)
	require.NoError(kv.t, err)
}

// sum is what a read of the whole table returns.
func (kv *kvTable) sum() readSum {
	var rows [][]string
	for id, v := range kv.model {
		rows = append(rows, []string{strconv.FormatInt(id, 10), v})
	}
	return sumRows(rows)
}

// ghostNode publishes, every 300 ms until the test ends, the record of a
// node "ghost" advertising addr, as package cluster's nodes do (its
// documented JSON value in the compacted nodes topic): a node whose record
// is fresh but whose Flight port refuses connections, as one that has just
// died, or is still starting, looks to the others.
func ghostNode(t *testing.T, broker, addr string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic(cluster.NodesTopic("cl.")))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	started := time.Now()
	publish := func(ctx context.Context) error {
		val, _ := json.Marshal(map[string]any{"id": "ghost", "address": addr, "started": started, "heartbeat": time.Now(), "slots": []int32{}})
		return cl.ProduceSync(ctx, &kgo.Record{Key: []byte("ghost"), Value: val}).FirstErr()
	}
	require.NoError(t, publish(ctx))
	go func() {
		defer close(done)
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = publish(ctx)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		tctx, tcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer tcancel()
		_ = cl.ProduceSync(tctx, &kgo.Record{Key: []byte("ghost")}).FirstErr() // tombstone
		cl.Close()
	})
}

// TestClusterReadsAcrossNodes: three nodes, --max-endpoints 3.
//
//  1. GetFlightInfo of a large SELECT * names a node in each endpoint:
//     the three nodes, each endpoint with the reuse-connection.
//  2. The Go ADBC, Python ADBC and JDBC drivers each read the whole result
//     (the rows and checksum of a single-endpoint read and of the writes),
//     fetching parts from every node.
//  3. Each ticket of one node (of t and of t$rt, whose parts hold log
//     offsets) read directly on every node, with Go's and pyarrow's Flight
//     clients, gives the same rows; a ticket naming a snapshot that does
//     not exist is a clear error.
//  4. A node named in the locations but down (a record that is fresh while
//     its port refuses; then a node SIGKILLed): every driver still reads
//     the whole result, and the dead node is no longer named once its
//     heartbeat is older than 3 s, while the cluster still lists it.
func TestClusterReadsAcrossNodes(t *testing.T) {
	t.Parallel() // waits on brokers and sessions, mostly: beside another cluster test
	rc := startReadCluster(t, []string{t.TempDir(), t.TempDir(), t.TempDir()})
	n1 := rc.nodes[0]
	uris := []string{rc.nodes[0].URI(), rc.nodes[1].URI(), rc.nodes[2].URI()}
	c := connect(t, n1)
	kv := newKV(t, c)
	want := kv.sum
	kv.write(c, 0, 6000, "v")
	waitTiered(t, c, "r", "kv", 6000)
	// Un-tiered rows on another node: t$rt's parts name log offsets.
	kv.write(connect(t, rc.nodes[1]), 5000, 6500, "w")
	raw := []*flightsqlclient.Client{rawClient(t, rc.nodes[0]), rawClient(t, rc.nodes[1]), rawClient(t, rc.nodes[2])}
	ctx := context.Background()

	// 3. Every node serves every ticket of n1.
	crossNode := func(sql string) {
		t.Helper()
		info, err := raw[0].Execute(ctx, sql)
		require.NoError(t, err, sql)
		require.Len(t, info.Endpoint, 3, sql)
		var total readSum
		for i, ep := range info.Endpoint {
			var first readSum
			for j, cl := range raw {
				got, err := readTicket(cl, ep.Ticket)
				require.NoError(t, err, "%s: endpoint %d of n1 read on n%d", sql, i, j+1)
				if j == 0 {
					first = got
					continue
				}
				require.Equal(t, first, got, "%s: endpoint %d of n1 read on n%d", sql, i, j+1)
			}
			require.Positive(t, first.Rows, "%s: endpoint %d", sql, i)
			total = total.plus(first)
		}
		require.Equal(t, want(), total, "%s: the parts together", sql)
	}
	crossNode(`SELECT * FROM r."kv$rt"`)
	waitTiered(t, c, "r", "kv", 6500)
	const scan = `SELECT * FROM r.kv`
	crossNode(scan)

	// A ticket that cannot be served: a clear error, and the node serves on.
	bad, err := flightsqlclient.CreateStatementQueryTicket([]byte("\x00r\x000/3@987654321\x00" + scan))
	require.NoError(t, err)
	_, err = readTicket(raw[1], &flight.Ticket{Ticket: bad})
	require.Error(t, err)
	t.Logf("a ticket naming a snapshot that does not exist: %v", err)
	require.Equal(t, codes.FailedPrecondition, status.Code(err), "%v", err)
	require.Contains(t, err.Error(), "run the query again")
	bad, err = flightsqlclient.CreateStatementQueryTicket([]byte("\x00r\x00nonsense\x00" + scan))
	require.NoError(t, err)
	_, err = readTicket(raw[2], &flight.Ticket{Ticket: bad})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.Contains(t, err.Error(), "part")
	got, err := readTicket(raw[2], mustTicket(t, raw[2], "SELECT count(*) FROM r.kv"))
	require.NoError(t, err)
	require.EqualValues(t, 1, got.Rows)

	// 1. The endpoints name the three nodes, each with the reuse-connection.
	testserver.Eventually(t, 30*time.Second, func() error {
		info, err := raw[0].Execute(ctx, scan)
		require.NoError(t, err)
		require.Len(t, info.Endpoint, 3)
		if named := distinct(namedNodes(t, info, uris[0])); len(named) != 3 {
			return fmt.Errorf("the endpoints name %v, want the three nodes %v", named, uris)
		}
		return nil
	})
	// The same rows read as one endpoint.
	one, err := raw[0].Execute(ctx, scan+" ORDER BY id")
	require.NoError(t, err)
	require.Len(t, one.Endpoint, 1)
	require.Empty(t, one.Endpoint[0].Location, "a result of one endpoint names no location")
	single, err := readTicket(raw[0], one.Endpoint[0].Ticket)
	require.NoError(t, err)
	require.Equal(t, want(), single)

	// pyarrow.flight: each ticket read from every node its endpoint names.
	if python() != "" {
		var res struct {
			Endpoints []struct {
				Locations []string           `json:"locations"`
				Reads     map[string]readSum `json:"reads"`
			} `json:"endpoints"`
		}
		require.NoError(t, json.Unmarshal(runPython(t, "flight", uris[1], scan), &res))
		require.Len(t, res.Endpoints, 3)
		var total readSum
		named := map[string]bool{}
		for i, ep := range res.Endpoints {
			require.Contains(t, ep.Locations, flight.LocationReuseConnection)
			first := ep.Reads["reuse"]
			for where, s := range ep.Reads {
				require.Equal(t, first, s, "pyarrow: endpoint %d of n2 read at %s", i, where)
				named[where] = true
			}
			total = total.plus(first)
		}
		require.Equal(t, want(), total, "pyarrow: the parts of n2 together")
		t.Logf("pyarrow.flight read n2's tickets at %v", named)
	}

	// 2. Every driver reads the whole result, from every node.
	ds := drivers(t)
	for _, d := range ds {
		var spread []float64
		for attempt := 1; ; attempt++ {
			before := rc.doGets(t)
			for i, s := range d.read(t, n1.URI(), n1.Addr, scan, 1) {
				require.Equal(t, single, s, "%s read %d", d.name, i)
			}
			spread = waitDoGets(t, rc, before, 3)
			if spread[0] > 0 && spread[1] > 0 && spread[2] > 0 {
				break
			}
			// A heartbeat late past 3 s leaves a node out for a while.
			require.Less(t, attempt, 5, "%s: DoGets by node %v: the reads never spread over the three nodes", d.name, spread)
		}
		t.Logf("%s: the whole result, its parts read on n1, n2, n3: %v DoGets", d.name, spread)
	}

	// ADBC's partitioned reads: planned on n1, each partition read by a
	// worker connected to n2, which follows the partition's locations.
	st, err := c.conn.NewStatement()
	require.NoError(t, err)
	require.NoError(t, st.SetSqlQuery(scan))
	_, parts, _, err := st.ExecutePartitions(ctx)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	require.EqualValues(t, 3, parts.NumPartitions)
	worker := connect(t, rc.nodes[1])
	var total readSum
	for i, id := range parts.PartitionIDs {
		r, err := worker.conn.ReadPartition(ctx, id)
		require.NoError(t, err, "partition %d", i)
		rows, err := rowsOf(r)
		r.Release()
		require.NoError(t, err, "partition %d", i)
		total = total.plus(sumRows(rows))
	}
	require.Equal(t, single, total, "n1's partitions read by a worker on n2")

	// 4a. A node named but down: every driver tries it, then falls back.
	// The ghost's port accepts connections and closes them at once, as a
	// process that dies does, and counts them.
	ghost, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ghost.Close() })
	var tried atomic.Int64
	go func() {
		for {
			conn, err := ghost.Accept()
			if err != nil {
				return
			}
			tried.Add(1)
			conn.Close()
		}
	}()
	dead := "grpc://" + ghost.Addr().String()
	names := func(named []string) []string {
		out := make([]string, len(named))
		for i, u := range named {
			out[i] = map[string]string{uris[0]: "n1", uris[1]: "n2", uris[2]: "n3", dead: "ghost"}[u]
		}
		return out
	}
	ghostNode(t, rc.broker.Addr(), dead)
	testserver.Eventually(t, 30*time.Second, func() error {
		info, err := raw[0].Execute(ctx, scan)
		require.NoError(t, err)
		if !distinct(namedNodes(t, info, uris[0]))[dead] {
			return fmt.Errorf("the endpoints do not name the ghost node yet")
		}
		return nil
	})
	for _, d := range ds {
		// Four live records, three endpoints a query, each query starting
		// at the next node: one of two reads names the ghost.
		before := tried.Load()
		sums := d.read(t, n1.URI(), n1.Addr, scan, 2)
		require.Len(t, sums, 2, d.name)
		for i, s := range sums {
			require.Equal(t, single, s, "%s read %d with a dead node named", d.name, i)
		}
		require.Greater(t, tried.Load(), before, "%s never tried the dead node its endpoint named", d.name)
		t.Logf("%s: the whole result, twice, after %d connections to the dead node", d.name, tried.Load()-before)
	}

	// 4b. A node SIGKILLed: named while its heartbeat is recent, then not,
	// while the cluster still lists it.
	rc.nodes[2].Stop(syscall.SIGKILL)
	info, err := raw[0].Execute(ctx, scan)
	require.NoError(t, err)
	t.Logf("just after n3 was killed, n1's endpoints name %v", names(namedNodes(t, info, uris[0])))
	for _, d := range ds {
		for i, s := range d.read(t, n1.URI(), n1.Addr, scan, 2) {
			require.Equal(t, single, s, "%s read %d just after n3 was killed", d.name, i)
		}
	}
	testserver.Eventually(t, 30*time.Second, func() error {
		info, err := raw[0].Execute(ctx, scan)
		require.NoError(t, err)
		if named := distinct(namedNodes(t, info, uris[0])); named[uris[2]] {
			return fmt.Errorf("n1 still names the dead n3: %v", named)
		}
		return nil
	})
	if rows, err := c.query("SELECT node_id FROM sys.nodes ORDER BY node_id"); err == nil {
		t.Logf("n3 no longer named; the cluster lists the nodes %v (a record is listed until three session timeouts old)", rows)
	}
	for _, d := range ds {
		before := rc.doGets(t)
		for i, s := range d.read(t, n1.URI(), n1.Addr, scan, 1) {
			require.Equal(t, single, s, "%s read %d after n3 is no longer named", d.name, i)
		}
		t.Logf("%s after n3 is no longer named: DoGets by node %v", d.name, waitDoGets(t, rc, before, 3))
	}
}

// waitDoGets waits until the nodes answered n more DoGets than before and
// returns how many each did.
func waitDoGets(t *testing.T, rc *readCluster, before []float64, n float64) []float64 {
	t.Helper()
	var delta []float64
	testserver.Eventually(t, 30*time.Second, func() error {
		now := rc.doGets(t)
		delta = make([]float64, len(now))
		var sum float64
		for i := range now {
			delta[i] = now[i] - before[i]
			sum += delta[i]
		}
		if sum < n {
			return fmt.Errorf("%v DoGets by node, want %v in all", delta, n)
		}
		return nil
	})
	return delta
}

// mustTicket is the one ticket of sql on cl.
func mustTicket(t *testing.T, cl *flightsqlclient.Client, sql string) *flight.Ticket {
	t.Helper()
	info, err := cl.Execute(context.Background(), sql)
	require.NoError(t, err)
	require.Len(t, info.Endpoint, 1)
	return info.Endpoint[0].Ticket
}

// TestClusterReadsWithAuthentication: a token is signed with the node's
// auth.key, so a node accepts the tokens of the nodes that share its key.
// n1 and n2 share one, n3 has its own. Go ADBC sends the token it has to
// every location: n3 refuses it and the driver reads that part from n1
// instead, n2 serves its part. JDBC authenticates anew at each location
// and reads from all three. Both get the whole result.
func TestClusterReadsWithAuthentication(t *testing.T) {
	t.Parallel() // waits on brokers and sessions, mostly: beside another cluster test
	const user, password = "alice", "pa:ss word"
	testserver.Setenv(t, "FLIGHTD_AUTH_PASSWORD", password)
	key := []byte("0123456789abcdef0123456789abcdef")
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	for _, d := range dirs[:2] {
		require.NoError(t, os.WriteFile(filepath.Join(d, "auth.key"), key, 0o600))
	}
	rc := startReadCluster(t, dirs, "--auth-user", user)
	n1 := rc.nodes[0]
	opts := map[string]string{adbc.OptionKeyURI: n1.URI(), adbc.OptionKeyUsername: user, adbc.OptionKeyPassword: password}
	db, err := newDriver().NewDatabase(opts)
	require.NoError(t, err)
	conn, err := db.Open(context.Background())
	require.NoError(t, err)
	c := &client{t: t, db: db, conn: conn}
	t.Cleanup(c.close)
	kv := newKV(t, c)
	kv.write(c, 0, 6000, "v")
	waitTiered(t, c, "r", "kv", 6000)
	const scan = `SELECT * FROM r.kv`

	for attempt := 1; ; attempt++ {
		before, refused := rc.doGets(t), rc.doGetsAnswered(t, "Unauthenticated")
		require.Equal(t, []readSum{kv.sum()}, goADBCReadWith(t, opts, scan, 1), "Go ADBC")
		ok := waitDoGets(t, rc, before, 3)
		now := rc.doGetsAnswered(t, "Unauthenticated")
		t.Logf("Go ADBC: DoGets answered by node %v, refused by n3 %v", ok, now[2]-refused[2])
		require.Zero(t, ok[2], "n3 accepts no token of n1")
		if ok[1] > 0 && now[2] > refused[2] {
			break // n2 served its part; n3 refused its part, which n1 served
		}
		require.Less(t, attempt, 5, "the endpoints never named n2 and n3")
	}
	if jdbcDir() == "" {
		t.Log("NOT CHECKED: the JDBC driver (make jdbc-check-jar)")
		return
	}
	for attempt := 1; ; attempt++ {
		before := rc.doGets(t)
		require.Equal(t, []readSum{kv.sum()}, jdbcReadWith(t, "lib", n1.Addr, scan, 1, "useEncryption=false&user="+user+"&password="+url.QueryEscape(password)), "JDBC")
		ok := waitDoGets(t, rc, before, 3)
		t.Logf("JDBC: DoGets answered by node %v", ok)
		if ok[0] > 0 && ok[1] > 0 && ok[2] > 0 {
			break
		}
		require.Less(t, attempt, 5, "JDBC's reads never spread over the three nodes")
	}
}
