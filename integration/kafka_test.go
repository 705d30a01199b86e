package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/internal/testkafka"
	"github.com/flightd/flightd/internal/testserver"
)

// kafkaTopics lists the broker's topics under prefix with their partition
// counts.
func kafkaTopics(t *testing.T, addr, prefix string) map[string]int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts, err := kadm.NewClient(cl).ListTopics(ctx)
	require.NoError(t, err)
	out := map[string]int{}
	for name, d := range ts {
		if strings.HasPrefix(name, prefix) {
			out[name] = len(d.Partitions)
		}
	}
	return out
}

// TestKafkaLog: a server whose log is on Kafka takes writes into t$rt at
// once, tiers them into the lake, keeps them across a SIGKILL, and names
// one topic per table with a partition per bucket.
func TestKafkaLog(t *testing.T) {
	t.Parallel()
	br := testkafka.Start(t)
	srv := testserver.Start(t, t.TempDir(), "--log", "kafka://"+br.Addr(), "--kafka-topic-prefix", "fd.", "--tiering-interval", "1h")
	c := connect(t, srv)
	c.mustExec("CREATE TABLE orders (id BIGINT, customer STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')")
	c.mustExec("CREATE TABLE events (id BIGINT, what STRING)")
	c.mustExec("INSERT INTO orders VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')")
	c.mustExec("INSERT INTO orders VALUES (2, 'b2')")
	c.mustExec("INSERT INTO events VALUES (1, 'x'), (2, 'y')")
	want := "1|a,2|b2,3|c,4|d,5|e"
	require.Equal(t, want, strings.Join(c.idCustomer(`"orders$rt"`), ","))
	require.Equal(t, "0", c.scalar("SELECT count(*) FROM orders"), "tiering waits an hour")
	require.Equal(t, "2", c.scalar(`SELECT count(*) FROM "events$rt"`))

	topics := kafkaTopics(t, br.Addr(), "fd.")
	require.Len(t, topics, 2, "one topic per table: %v", topics)
	for name, parts := range topics {
		switch {
		case strings.HasPrefix(name, "fd.default.orders."):
			require.Equal(t, 4, parts, "a partition per bucket")
		case strings.HasPrefix(name, "fd.default.events."):
			require.Equal(t, 1, parts)
		default:
			t.Fatalf("unexpected topic %s", name)
		}
	}

	srv.RestartWith(syscall.SIGKILL, "--tiering-interval", "200ms")
	c = connect(t, srv)
	require.Equal(t, want, strings.Join(c.idCustomer(`"orders$rt"`), ","), "acknowledged writes survive a SIGKILL")
	c.mustExec("INSERT INTO orders VALUES (6, 'f')")
	testserver.Eventually(t, 60*time.Second, func() error {
		if got := strings.Join(c.idCustomer("orders"), ","); got != want+",6|f" {
			return fmt.Errorf("the lake holds %s", got)
		}
		if got := c.scalar("SELECT count(*) FROM events"); got != "2" {
			return fmt.Errorf("the lake holds %s events", got)
		}
		return nil
	})
	require.Equal(t, want+",6|f", strings.Join(c.idCustomer(`"orders$rt"`), ","))
	require.Equal(t, "2", c.scalar("SELECT count(*) FROM events"))

	srv.Restart(syscall.SIGKILL)
	c = connect(t, srv)
	c.mustExec("INSERT INTO orders VALUES (7, 'g')")
	require.Equal(t, want+",6|f,7|g", strings.Join(c.idCustomer(`"orders$rt"`), ","), "nothing tiered twice, nothing lost")
	require.Equal(t, "2", c.scalar(`SELECT count(*) FROM "events$rt"`))

	c.mustExec("DROP TABLE events")
	testserver.Eventually(t, 30*time.Second, func() error {
		if ts := kafkaTopics(t, br.Addr(), "fd."); len(ts) != 1 {
			return fmt.Errorf("topics after DROP TABLE: %v", ts)
		}
		return nil
	})
}

// TestKafkaUnavailable: with the broker down, writes fail with UNAVAILABLE
// naming the brokers, the lake (t) is still served, and everything resumes,
// with nothing acknowledged lost, when the broker returns.
func TestKafkaUnavailable(t *testing.T) {
	t.Parallel()
	br := testkafka.Start(t)
	srv := testserver.Start(t, t.TempDir(), "--log", "kafka://"+br.Addr(), "--kafka-timeout", "6s", "--tiering-interval", "1h")
	c := connect(t, srv)
	c.mustExec("CREATE TABLE orders (id BIGINT, customer STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	c.mustExec("INSERT INTO orders VALUES (1, 'a'), (2, 'b')")
	c.mustExec("ALTER TABLE orders SET ('lakestream.freshness' = '100ms')")
	testserver.Eventually(t, 60*time.Second, func() error {
		if got := c.scalar("SELECT count(*) FROM orders"); got != "2" {
			return fmt.Errorf("the lake holds %s rows", got)
		}
		return nil
	})
	c.mustExec("ALTER TABLE orders SET ('lakestream.freshness' = '1h')")
	c.mustExec("INSERT INTO orders VALUES (3, 'c')")

	br.Stop()
	_, err := c.exec("INSERT INTO orders VALUES (4, 'd')")
	require.Error(t, err)
	require.Equal(t, codes.Unavailable, grpcCode(err), "%v", err)
	require.Contains(t, err.Error(), br.Addr(), "the error names the brokers")
	require.Equal(t, "1|a,2|b", strings.Join(c.idCustomer("orders"), ","), "the lake is served without the log")
	if rows, err := c.query(`SELECT id, customer FROM "orders$rt" ORDER BY id`); err == nil {
		require.Equal(t, "1|a,2|b,3|c", strings.Join(sortedRows(rows), ","), "t$rt answers from what the server holds")
	} else {
		require.Equal(t, codes.Unavailable, grpcCode(err), "t$rt fails clearly: %v", err)
	}

	br.Restart(t)
	testserver.Eventually(t, 60*time.Second, func() error {
		_, err := c.exec("INSERT INTO orders VALUES (5, 'e')")
		return err
	})
	got := strings.Join(c.idCustomer(`"orders$rt"`), ",")
	require.Contains(t, []string{"1|a,2|b,3|c,5|e", "1|a,2|b,3|c,4|d,5|e"}, got,
		"acknowledged rows are all there; the refused one may or may not be (its outcome was unknown)")
	srv.Restart(syscall.SIGKILL)
	c = connect(t, srv)
	require.Equal(t, got, strings.Join(c.idCustomer(`"orders$rt"`), ","))

	// The server starts while the brokers are down: it serves the lake,
	// fails t$rt and writes clearly, and recovers when they return.
	lake := strings.Join(c.idCustomer("orders"), ",")
	c.close()
	br.Stop()
	srv.Restart(syscall.SIGKILL)
	c = connect(t, srv)
	served := c.idCustomer("orders") // tiering may have committed more since
	require.Subset(t, served, strings.Split(lake, ","), "the lake is served")
	require.Subset(t, strings.Split(got, ","), served, "the lake is served")
	_, err = c.query(`SELECT * FROM "orders$rt"`)
	require.Error(t, err)
	require.Equal(t, codes.Unavailable, grpcCode(err), "%v", err)
	require.Contains(t, err.Error(), "not recovered yet")
	_, err = c.exec("INSERT INTO orders VALUES (6, 'f')")
	require.Equal(t, codes.Unavailable, grpcCode(err), "%v", err)
	br.Restart(t)
	testserver.Eventually(t, 2*time.Minute, func() error {
		_, err := c.query(`SELECT * FROM "orders$rt"`)
		return err
	})
	require.Equal(t, got, strings.Join(c.idCustomer(`"orders$rt"`), ","), "everything acknowledged, after the brokers' return")
}

// grpcCode digs the gRPC status code out of an ADBC error.
func grpcCode(err error) codes.Code {
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	msg := err.Error()
	for _, c := range []codes.Code{codes.Unavailable, codes.ResourceExhausted, codes.InvalidArgument, codes.Internal, codes.FailedPrecondition} {
		if strings.Contains(msg, "("+c.String()+";") || strings.Contains(msg, "["+c.String()+"]") || strings.Contains(msg, "Unavailable") && c == codes.Unavailable {
			return c
		}
	}
	return codes.Unknown
}

// runFlightd runs the binary to its end and returns its output and error.
func runFlightd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, testserver.Binary(t), args...).CombinedOutput()
	return string(out), err
}

// TestLogMigrate: a warehouse served with the Badger log refuses to start
// with the Kafka log while its tables are on Badger, naming the fix;
// `flightd log migrate` drains them and moves them, and back again, with
// every acknowledged row kept.
func TestLogMigrate(t *testing.T) {
	t.Parallel()
	br := testkafka.Start(t)
	kafka := "kafka://" + br.Addr()
	dir := t.TempDir()
	srv := testserver.Start(t, dir, "--tiering-interval", "1h")
	c := connect(t, srv)
	c.mustExec("CREATE TABLE orders (id BIGINT, customer STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	c.mustExec("CREATE TABLE events (id BIGINT, what STRING)")
	c.mustExec("INSERT INTO orders VALUES (1, 'a'), (2, 'b'), (3, 'c')")
	c.mustExec("INSERT INTO events VALUES (1, 'x')")
	require.Equal(t, "0", c.scalar("SELECT count(*) FROM orders"), "un-tiered")
	c.close()
	srv.Stop(syscall.SIGTERM)

	out, err := runFlightd(t, "serve", "--data-dir", dir, "--listen", "127.0.0.1:0", "--log", kafka)
	require.Error(t, err, "serving the Kafka log over tables on Badger must fail:\n%s", out)
	require.Contains(t, out, "default.orders")
	require.Contains(t, out, "flightd log migrate --to "+kafka)

	out, err = runFlightd(t, "log", "migrate", "--to", kafka, "--data-dir", dir)
	require.NoError(t, err, out)
	require.Contains(t, out, "moved 2 table(s) from the badger log to the kafka:flightd. log")

	srv.RestartWith(syscall.SIGKILL, "--log", kafka)
	c = connect(t, srv)
	require.Equal(t, "1|a,2|b,3|c", strings.Join(c.idCustomer("orders"), ","), "drained into the lake")
	c.mustExec("INSERT INTO orders VALUES (2, 'b2'), (4, 'd')")
	c.mustExec("INSERT INTO events VALUES (2, 'y')")
	require.Equal(t, "1|a,2|b2,3|c,4|d", strings.Join(c.idCustomer(`"orders$rt"`), ","))
	require.Equal(t, "1|a,2|b,3|c", strings.Join(c.idCustomer("orders"), ","), "the new rows wait in Kafka")
	c.close()
	srv.Stop(syscall.SIGTERM)

	out, err = runFlightd(t, "log", "migrate", "--log", kafka, "--to", "badger", "--data-dir", dir)
	require.NoError(t, err, out)
	require.Contains(t, out, "moved 2 table(s)")
	out, err = runFlightd(t, "log", "migrate", "--log", kafka, "--to", "badger", "--data-dir", dir)
	require.NoError(t, err, out)
	require.Contains(t, out, "moved 0 table(s)", "a second run has nothing to do")

	srv.RestartWith(syscall.SIGKILL, "--log", "badger")
	c = connect(t, srv)
	require.Equal(t, "1|a,2|b2,3|c,4|d", strings.Join(c.idCustomer("orders"), ","))
	require.Equal(t, "2", c.scalar(`SELECT count(*) FROM "events$rt"`))
	c.mustExec("INSERT INTO orders VALUES (5, 'e')")
	require.Equal(t, "1|a,2|b2,3|c,4|d,5|e", strings.Join(c.idCustomer(`"orders$rt"`), ","))
}

// TestKafkaSameAsBadger runs the same statements on a server with each log
// and requires the same answers: t$rt, t$changelog, the lake after tiering
// and sys.tiering's row counts; and a streaming read of t$rt on the Kafka
// log delivers the current rows and then each change.
func TestKafkaSameAsBadger(t *testing.T) {
	t.Parallel()
	br := testkafka.Start(t)
	servers := map[string]*testserver.Server{
		"badger": testserver.Start(t, t.TempDir(), "--tiering-interval", "1h"),
		"kafka":  testserver.Start(t, t.TempDir(), "--tiering-interval", "1h", "--log", "kafka://"+br.Addr()),
	}
	script := []string{
		"CREATE TABLE kv (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '3')",
		"CREATE TABLE ev (id BIGINT, what STRING)",
		"INSERT INTO kv VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')",
		"INSERT INTO ev VALUES (1, 'x'), (2, 'y')",
		"INSERT INTO kv VALUES (2, 'b2'), (5, 'e')",
		"INSERT INTO kv VALUES (2, 'b3'), (1, 'a2')",
		"INSERT INTO ev VALUES (3, 'z')",
	}
	queries := []string{
		`SELECT id, v FROM "kv$rt" ORDER BY id`,
		`SELECT _change_type, id, v FROM "kv$changelog" ORDER BY _log_offset, _bucket, id`,
		`SELECT count(*), sum(id) FROM "ev$rt"`,
		`SELECT _change_type, id, what FROM "ev$changelog" ORDER BY id`,
	}
	tiered := []string{
		`SELECT id, v FROM kv ORDER BY id`,
		`SELECT id, what FROM ev ORDER BY id`,
		`SELECT "table", bucket, lake_offset, log_end, lag_rows, failed_rounds FROM sys.tiering ORDER BY 1, 2`,
	}
	answers := map[string][][][]string{}
	for name, srv := range servers {
		c := connect(t, srv)
		for _, s := range script {
			c.mustExec(s)
		}
		for _, q := range queries {
			answers[name] = append(answers[name], c.mustQuery(q))
		}
		c.mustExec("ALTER TABLE kv SET ('lakestream.freshness' = '100ms')")
		c.mustExec("ALTER TABLE ev SET ('lakestream.freshness' = '100ms')")
		testserver.Eventually(t, time.Minute, func() error {
			if n := c.scalar("SELECT count(*) FROM ev"); n != "3" {
				return fmt.Errorf("%s: %s events tiered", name, n)
			}
			if n := c.scalar("SELECT count(*) FROM kv WHERE v = 'b3'"); n != "1" {
				return fmt.Errorf("%s: kv not tiered yet", name)
			}
			return nil
		})
		for _, q := range tiered {
			answers[name] = append(answers[name], c.mustQuery(q))
		}
	}
	require.NotEmpty(t, answers["badger"][0])
	require.Equal(t, answers["badger"], answers["kafka"], "the same answers on both logs")

	// A streaming read of kv$rt on the Kafka log.
	streamOn := "kafka"
	db, err := newDriver().NewDatabase(map[string]string{adbc.OptionKeyURI: servers[streamOn].URI(),
		adbcflight.OptionCookieMiddleware: adbc.OptionValueEnabled})
	require.NoError(t, err)
	defer db.Close()
	conn, err := db.Open(context.Background())
	require.NoError(t, err)
	defer conn.Close()
	sc := &client{t: t, db: nil, conn: conn}
	_, err = sc.query("SET streaming = true")
	require.NoError(t, err)
	st, err := conn.NewStatement()
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.SetSqlQuery(`SELECT id, v FROM "kv$rt"`))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rr, _, err := st.ExecuteQuery(ctx)
	require.NoError(t, err)
	defer rr.Release()
	read := func(n int) []string {
		var got []string
		for len(got) < n && rr.Next() {
			rec := rr.RecordBatch()
			for i := 0; i < int(rec.NumRows()); i++ {
				var row []string
				for j := 0; j < int(rec.NumCols()); j++ {
					row = append(row, rec.Column(j).ValueStr(i))
				}
				got = append(got, strings.Join(row, "|"))
			}
		}
		require.NoError(t, rr.Err())
		return got
	}
	cur := read(5)
	require.Len(t, cur, 5, "the current rows first")
	w := connect(t, servers[streamOn])
	w.mustExec("INSERT INTO kv VALUES (6, 'f')")
	require.Equal(t, []string{"+I|6|f"}, read(1), "then each change")
	w.mustExec("INSERT INTO kv VALUES (3, 'c2')")
	require.Equal(t, []string{"-U|3|c", "+U|3|c2"}, read(2))
}

// TestLostLogIsRefusedNotIgnored: a table's log lost its records (here the
// Badger directory is deleted; a deleted Kafka topic is the same) while the
// lake holds rows up to some offset. Writes would get offsets below it and
// never show: they are refused, and so is t$rt, naming the fix; switching
// the table's log off and on starts a new one.
func TestLostLogIsRefusedNotIgnored(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := testserver.Start(t, dir, "--tiering-interval", "100ms")
	c := connect(t, srv)
	c.mustExec("CREATE TABLE orders (id BIGINT, customer STRING, PRIMARY KEY (id) NOT ENFORCED)")
	c.mustExec("INSERT INTO orders VALUES (1, 'a'), (2, 'b')")
	testserver.Eventually(t, time.Minute, func() error {
		if n := c.scalar("SELECT count(*) FROM orders"); n != "2" {
			return fmt.Errorf("%s rows tiered", n)
		}
		return nil
	})
	c.close()
	srv.Stop(syscall.SIGTERM)
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "log")))
	srv.Restart(syscall.SIGKILL)
	c = connect(t, srv)
	_, err := c.exec("INSERT INTO orders VALUES (3, 'c')")
	require.ErrorContains(t, err, "ends at offset 0 in bucket 0, but the lake already holds that bucket's rows up to")
	require.Equal(t, codes.FailedPrecondition, grpcCode(err), "%v", err)
	_, err = c.query(`SELECT * FROM "orders$rt"`)
	require.ErrorContains(t, err, "ends at offset 0 in bucket 0")
	require.Equal(t, "1|a,2|b", strings.Join(c.idCustomer("orders"), ","), "the lake is served")

	c.mustExec("ALTER TABLE orders SET ('lakestream.enabled' = 'false')")
	c.mustExec("ALTER TABLE orders SET ('lakestream.enabled' = 'true')")
	c.mustExec("INSERT INTO orders VALUES (3, 'c')")
	require.Equal(t, "1|a,2|b,3|c", strings.Join(c.idCustomer(`"orders$rt"`), ","))
}
