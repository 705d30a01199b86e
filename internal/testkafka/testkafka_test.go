package testkafka

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newClient(t testing.TB, addrs []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t testing.TB, addrs []string, topic string, partitions int32, rf int16) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, addrs))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, rf, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// readCommitted reads topic from the start, read_committed, until it has
// seen a record with value until (bounded), and returns every value read.
func readCommitted(t testing.TB, addrs []string, topic, until string) []string {
	t.Helper()
	cl := newClient(t, addrs,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []string
	for !slices.Contains(got, until) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: %q not seen in 60s; read %q", topic, until, got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// TestBroker: one broker takes idempotent acks=all writes and transactions;
// a read_committed reader sees the committed transaction and not the aborted
// one, before and after a SIGKILL and restart.
func TestBroker(t *testing.T) {
	start := time.Now()
	b := Start(t)
	t.Logf("broker %d on %s serving after %s", b.NodeID(), b.Addr(), time.Since(start).Round(time.Millisecond))
	if rss, ok := rssKiB(b); ok {
		t.Logf("broker RSS after start: %d MiB", rss>>10)
	}
	addrs := []string{b.Addr()}
	const topic = "events"
	createTopic(t, addrs, topic, 1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	p := newClient(t, addrs, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic))
	if err := p.ProduceSync(ctx, kgo.StringRecord("plain")).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	tx := newClient(t, addrs, kgo.TransactionalID("testkafka-tx"), kgo.DefaultProduceTopic(topic))
	for _, c := range []struct {
		value  string
		commit kgo.TransactionEndTry
	}{{"committed", kgo.TryCommit}, {"aborted", kgo.TryAbort}} {
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		// ProduceSync: the record is in the log before the transaction ends,
		// so the abort has written data to hide.
		if err := tx.ProduceSync(ctx, kgo.StringRecord(c.value)).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", c.value, err)
		}
		if err := tx.EndTransaction(ctx, c.commit); err != nil {
			t.Fatalf("end transaction of %s: %v", c.value, err)
		}
	}
	// After both transactions ended: read_committed reaches it only past them.
	if err := p.ProduceSync(ctx, kgo.StringRecord("last")).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	want := []string{"plain", "committed", "last"}
	if got := readCommitted(t, addrs, topic, "last"); !slices.Equal(got, want) {
		t.Fatalf("read_committed read %q, want %q", got, want)
	}

	b.Kill()
	if b.Running() {
		t.Fatal("running after Kill")
	}
	start = time.Now()
	b.Restart(t)
	t.Logf("restart after SIGKILL serving after %s", time.Since(start).Round(time.Millisecond))
	if got := readCommitted(t, addrs, topic, "last"); !slices.Equal(got, want) {
		t.Fatalf("after kill and restart read_committed read %q, want %q", got, want)
	}
	// The transactional id still works after the crash: its coordinator state was kept.
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatalf("produce after restart: %v", err)
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after restart: %v", err)
	}
	if got := readCommitted(t, addrs, topic, "after"); !slices.Equal(got, append(want, "after")) {
		t.Fatalf("read_committed read %q, want %q", got, append(want, "after"))
	}

	start = time.Now()
	b.Stop()
	t.Logf("graceful stop took %s", time.Since(start).Round(time.Millisecond))
	if b.Running() {
		t.Fatal("running after Stop")
	}
}

// TestStartRetriesTakenPort: a broker whose port another process took before
// it could bind it starts again on new ports.
func TestStartRetriesTakenPort(t *testing.T) {
	if os.Getenv(EnvLib) == "" {
		t.Skip("needs " + EnvLib)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	calls := 0
	pickPorts = func(n int) ([]int, error) {
		calls++
		ports, err := freePorts(n)
		if calls == 1 && err == nil {
			ports[0] = takenPort
		}
		return ports, err
	}
	defer func() { pickPorts = freePorts }()
	b := Start(t)
	if calls != 2 || b.Addr() == taken.Addr().String() {
		t.Fatalf("picked ports %d times, serving on %s (taken: %s); want a second pick", calls, b.Addr(), taken.Addr())
	}
}

// TestStartWithoutLib: with FLIGHTD_KAFKA_LIB unset Start skips the test, and
// with it naming a directory without the jars it fails the test.
func TestStartWithoutLib(t *testing.T) {
	for _, c := range []struct {
		lib             string
		skipped, failed bool
	}{{"", true, false}, {t.TempDir(), false, true}} {
		t.Setenv(EnvLib, c.lib)
		skipped, failed := runTB(func(tb testing.TB) { Start(tb) })
		if skipped != c.skipped || failed != c.failed {
			t.Errorf("%s=%q: skipped %v failed %v, want %v %v", EnvLib, c.lib, skipped, failed, c.skipped, c.failed)
		}
	}
}

// runTB runs f with a testing.TB whose Skip and Fatal end f's goroutine, and
// reports which of them ended it.
func runTB(f func(testing.TB)) (skipped, failed bool) {
	tb := &recordingTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(tb)
	}()
	<-done
	return tb.skipped, tb.failed
}

type recordingTB struct {
	testing.TB
	skipped, failed bool
}

func (r *recordingTB) Helper()               {}
func (r *recordingTB) Skip(args ...any)      { r.skipped = true; runtime.Goexit() }
func (r *recordingTB) Fatalf(string, ...any) { r.failed = true; runtime.Goexit() }
func (r *recordingTB) Fatal(...any)          { r.failed = true; runtime.Goexit() }
func (r *recordingTB) TempDir() string       { panic("TempDir before the jars were checked") }
func (r *recordingTB) Cleanup(func())        {}
func (r *recordingTB) Logf(string, ...any)   {}

// TestKafkaCluster: three nodes, a topic with 3 replicas and min ISR 2; a
// node is SIGKILLed while an idempotent acks=all producer writes, and every
// acknowledged record is read back, once. The killed node then restarts and
// rejoins every ISR.
func TestKafkaCluster(t *testing.T) {
	if !ClusterEnabled() {
		t.Skip("the 3-broker test runs with " + EnvCluster + "=1 (make test-kafka-cluster)")
	}
	start := time.Now()
	c := StartCluster(t, 3)
	t.Logf("3 nodes serving after %s", time.Since(start).Round(time.Millisecond))
	addrs := c.Addrs()
	const topic, partitions = "replicated", 3
	createTopic(t, addrs, topic, partitions, 3)

	adm := kadm.NewClient(newClient(t, addrs))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	p0 := md.Topics[topic].Partitions[0]
	if len(p0.Replicas) != 3 || len(p0.ISR) != 3 {
		t.Fatalf("partition 0: replicas %v ISR %v, want 3 of each", p0.Replicas, p0.ISR)
	}
	victim := c.Broker(int(p0.Leader) - 1) // the leader of partition 0

	p := newClient(t, addrs,
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RecordDeliveryTimeout(90*time.Second))

	// Produce a bounded number of records, a few in flight at a time; kill the
	// victim once a third are acknowledged.
	const total = 3000
	start = time.Now()
	var (
		mu     sync.Mutex
		acked  = map[string]bool{}
		failed int
		wg     sync.WaitGroup
	)
	killed := make(chan struct{})
	sem := make(chan struct{}, 32)
	for i := range total {
		if i == total/3 {
			// With up to 32 records in flight.
			victim.Kill()
			mu.Lock()
			t.Logf("killed node %d (leader of partition 0; the active controller is %d) after %d acknowledged, %s in",
				victim.NodeID(), md.Controller, len(acked), time.Since(start).Round(time.Millisecond))
			mu.Unlock()
			close(killed)
		}
		sem <- struct{}{}
		wg.Add(1)
		v := strconv.Itoa(i)
		p.Produce(ctx, kgo.StringRecord(v), func(_ *kgo.Record, err error) {
			defer func() { <-sem; wg.Done() }()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				return
			}
			acked[v] = true
		})
	}
	wg.Wait()
	<-killed
	t.Logf("%d acknowledged, %d failed, in %s", len(acked), failed, time.Since(start).Round(time.Millisecond))
	if len(acked) < total*9/10 {
		t.Fatalf("only %d of %d acknowledged with 2 of 3 nodes up", len(acked), total)
	}

	start = time.Now()
	victim.Restart(t)
	t.Logf("node %d restarted, serving after %s", victim.NodeID(), time.Since(start).Round(time.Millisecond))

	// Every acknowledged record is there, once.
	cl := newClient(t, addrs,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	missing := func() int {
		n := 0
		for v := range acked {
			if seen[v] == 0 {
				n++
			}
		}
		return n
	}
	for missing() > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d acknowledged records not read back", missing())
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	for v, n := range seen {
		if n > 1 {
			t.Errorf("record %s read %d times", v, n)
		}
	}

	// The restarted node catches up and rejoins every ISR.
	start = time.Now()
	for {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		full := 0
		for _, pd := range md.Topics[topic].Partitions {
			if len(pd.ISR) == 3 {
				full++
			}
		}
		if full == partitions {
			t.Logf("node %d back in every ISR after %s", victim.NodeID(), time.Since(start).Round(time.Millisecond))
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("node %d not back in every ISR: %s", victim.NodeID(), fmt.Sprint(md.Topics[topic].Partitions))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// rssKiB reads the broker JVM's resident set from /proc (Linux).
func rssKiB(b *Broker) (int, bool) {
	b.mu.Lock()
	pid := b.proc.cmd.Process.Pid
	b.mu.Unlock()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	var kib int
	for _, line := range strings.Split(string(data), "\n") {
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kib); err == nil {
			return kib, true
		}
	}
	return 0, false
}
