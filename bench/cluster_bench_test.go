package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/internal/testkafka"
	"github.com/flightd/flightd/internal/testserver"
)

// startCluster starts n nodes over one Kafka broker and one warehouse
// directory. alone: one server without --node-id (no cluster), for the
// baseline.
func startCluster(b *testing.B, n int, alone bool, extra ...string) []*testserver.Server {
	b.Helper()
	br := testkafka.Start(b)
	wh := filepath.Join(b.TempDir(), "warehouse")
	if err := os.MkdirAll(wh, 0o755); err != nil {
		b.Fatal(err)
	}
	var nodes []*testserver.Server
	for i := range n {
		args := []string{"--log", "kafka://" + br.Addr(), "--warehouse", wh, "--log-level", "warn"}
		if !alone {
			args = append(args, "--node-id", fmt.Sprintf("n%d", i+1), "--cluster-session-timeout", "6s")
		}
		nodes = append(nodes, testserver.Start(b, b.TempDir(), append(args, extra...)...))
	}
	return nodes
}

// BenchmarkCluster measures what running several nodes costs and how fast
// they see each other (`make bench-cluster`; a 2-core machine cannot show
// a speed-up, so it measures cost, not throughput):
//
//   - cpu/nodes=N: 2M rows (8 columns, 4-bucket PK table) ingested as one
//     stream per node, the stream split over the nodes, and tiered into
//     the lake: the server CPU-seconds per million rows, summed over the
//     nodes (cpu-s/Mrows) and of the busiest node (max-node-cpu-s/Mrows).
//     nodes=1-alone is one server without --node-id; nodes=3-one-writer
//     sends the whole stream through one node (the others only follow
//     the log).
//   - visible/read=other-node: a row acknowledged by node A, read in t$rt
//     on node B: the time from A's acknowledgement to B's first answer
//     holding it (B's read starts after the acknowledgement; p50/p99 over
//     b.N rows). read=same-node reads on A, for the point query's own cost.
//   - failover: the node that tiers a table is SIGKILLed while writes go
//     on; the seconds until another node commits the table's next
//     snapshot (session timeout 6 s, tiering interval 1 s).
func BenchmarkCluster(b *testing.B) {
	const total = 2_000_000
	for _, tc := range []struct {
		name    string
		n       int
		alone   bool
		writers int // nodes the stream is split over (0: all)
	}{{"nodes=1-alone", 1, true, 0}, {"nodes=1", 1, false, 0}, {"nodes=2", 2, false, 0}, {"nodes=3", 3, false, 0}, {"nodes=3-one-writer", 3, false, 1}} {
		b.Run("cpu/"+tc.name, func(b *testing.B) {
			nodes := startCluster(b, tc.n, tc.alone, "--tiering-interval", "1s")
			c := open(b, nodes[0].URI())
			c.exec(b, "CREATE DATABASE bench")
			c.exec(b, "CREATE TABLE bench.t "+fmt.Sprintf(eightColsDDL, ", PRIMARY KEY (id) NOT ENFORCED", " WITH ('bucket' = '4')"))
			batches := make([]arrow.RecordBatch, total/batchRows)
			for i := range batches {
				batches[i] = makeBatch(int64(i*batchRows), batchRows, 1)
			}
			b.Cleanup(func() {
				for _, r := range batches {
					r.Release()
				}
			})
			conns := make([]*conn, len(nodes))
			for i, n := range nodes {
				conns[i] = open(b, n.URI())
			}
			if tc.writers > 0 {
				conns = conns[:tc.writers]
			}
			cpu0 := make([]float64, len(nodes))
			for i, n := range nodes {
				cpu0[i] = n.CPUSeconds()
			}
			b.ResetTimer()
			for b.Loop() {
				var wg sync.WaitGroup
				for w, cn := range conns {
					var mine []arrow.RecordBatch
					for i := w; i < len(batches); i += len(conns) {
						mine = append(mine, batches[i])
					}
					wg.Go(func() { cn.ingestStream(b, "t", mine) })
				}
				wg.Wait()
				// Tiered: the lake holds every row.
				deadline := time.Now().Add(5 * time.Minute)
				for {
					n, err := c.scalar("SELECT count(*) FROM bench.t")
					if err != nil {
						b.Fatal(err)
					}
					if n == total {
						break
					}
					if time.Now().After(deadline) {
						b.Fatalf("the lake holds %.0f of %d rows after 5 minutes", n, total)
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
			b.StopTimer()
			var sum, most float64
			for i, n := range nodes {
				d := n.CPUSeconds() - cpu0[i]
				sum += d
				most = max(most, d)
			}
			mrows := float64(total) * float64(b.N) / 1e6
			b.ReportMetric(sum/mrows, "cpu-s/Mrows")
			b.ReportMetric(most/mrows, "max-node-cpu-s/Mrows")
		})
	}

	for _, on := range []string{"other-node", "same-node"} {
		b.Run("visible/read="+on, func(b *testing.B) {
			nodes := startCluster(b, 2, false, "--tiering-interval", "1h")
			a, r := open(b, nodes[0].URI()), open(b, nodes[1].URI())
			if on == "same-node" {
				r = a
			}
			a.exec(b, "CREATE DATABASE bench")
			a.exec(b, "CREATE TABLE bench.kv (id BIGINT, v BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')")
			if _, err := r.tryQuery(`SELECT * FROM bench."kv$rt"`); err != nil {
				b.Fatal(err)
			}
			var lat []time.Duration
			b.ResetTimer()
			i := 0
			for b.Loop() {
				i++
				a.exec(b, fmt.Sprintf("INSERT INTO bench.kv VALUES (%d, %d)", i%1000, i))
				acked := time.Now()
				for {
					v, err := r.scalar(fmt.Sprintf(`SELECT max(v) FROM bench."kv$rt" WHERE id = %d`, i%1000))
					if err != nil {
						b.Fatal(err)
					}
					if int(v) == i {
						break
					}
				}
				lat = append(lat, time.Since(acked))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}

	b.Run("failover", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			nodes := startCluster(b, 3, false, "--tiering-interval", "1s")
			c := open(b, nodes[0].URI())
			c.exec(b, "CREATE DATABASE bench")
			c.exec(b, "CREATE TABLE bench.kv (id BIGINT, v BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')")
			c.exec(b, "INSERT INTO bench.kv VALUES (0, 0)")
			owner := waitOwner(b, c, "")
			victim := -1
			for i := range nodes {
				if owner == fmt.Sprintf("n%d", i+1) {
					victim = i
				}
			}
			if victim < 0 {
				b.Fatalf("owner %q is not a node", owner)
			}
			// Writes go on through a node that stays.
			stay := open(b, nodes[(victim+1)%3].URI())
			snap := lastSnapshot(b, stay)
			b.StartTimer()
			killed := time.Now()
			nodes[victim].Stop(syscall.SIGKILL)
			for i := 1; ; i++ {
				stay.exec(b, fmt.Sprintf("INSERT INTO bench.kv VALUES (%d, %d)", i%100, i))
				if s := lastSnapshot(b, stay); s > snap {
					if o := waitOwner(b, stay, ""); o == owner {
						b.Fatalf("snapshot %.0f committed, but sys.tiering still names the killed node %s", s, o)
					}
					break
				}
				if time.Since(killed) > 2*time.Minute {
					b.Fatal("no snapshot after the owner was killed within 2 minutes")
				}
				time.Sleep(50 * time.Millisecond)
			}
			b.ReportMetric(time.Since(killed).Seconds(), "failover-s")
		}
	})
}

// waitOwner returns bench.kv's owner in sys.tiering once one is named (and
// is not not).
func waitOwner(b *testing.B, c *conn, not string) string {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		owners := c.strings(b, `SELECT DISTINCT owner FROM sys.tiering WHERE "database" = 'bench' AND "table" = 'kv' AND owner IS NOT NULL`)
		if len(owners) == 1 && owners[0] != not {
			return owners[0]
		}
		if time.Now().After(deadline) {
			b.Fatalf("bench.kv has owners %v after a minute", owners)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func lastSnapshot(b *testing.B, c *conn) float64 {
	b.Helper()
	v, err := c.scalar(`SELECT coalesce(max(snapshot_id), 0) FROM sys.tiering WHERE "database" = 'bench' AND "table" = 'kv'`)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// strings returns the first column of sql's rows as text, sorted.
func (c *conn) strings(b testing.TB, sql string) []string {
	b.Helper()
	st, err := c.statement(sql)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	r, _, err := st.ExecuteQuery(b.Context())
	if err != nil {
		b.Fatal(sql, err)
	}
	defer r.Release()
	var out []string
	for r.Next() {
		rec := r.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			out = append(out, strings.Trim(rec.Column(0).ValueStr(i), `"`))
		}
	}
	if err := r.Err(); err != nil {
		b.Fatal(err)
	}
	sort.Strings(out)
	return out
}
