package testkafka

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Environment variables the package reads.
const (
	// EnvLib names the directory of the broker's jars (kafka_2.13 and its
	// runtime dependencies): integration/kafka/target/lib after `make kafka-broker`.
	EnvLib = "FLIGHTD_KAFKA_LIB"
	// EnvCluster, set to 1, runs the multi-broker tests (ClusterEnabled).
	EnvCluster = "FLIGHTD_KAFKA_CLUSTER"
)

const (
	// serveTimeout bounds the wait for a started node to serve; a JVM start
	// takes 2-3 s on an idle 2-core machine and much longer beside other
	// test binaries.
	serveTimeout = 90 * time.Second
	// stopTimeout bounds a graceful stop before SIGKILL.
	stopTimeout = 15 * time.Second
	// formatTimeout bounds kafka-storage format.
	formatTimeout = 60 * time.Second
	startAttempts = 3
)

// jvmFlags are the broker JVM's flags besides the classpath: a bounded heap,
// the serial collector and the C1 compiler only, and an exit instead of a
// limp on running out of heap. Measured on 2 cores against G1 and against
// serial with C2: start about 0.5 s sooner, 8 writers of single-record acks=all
// requests about 1.5x faster (C2's compiler threads no longer compete with the
// broker in a test's first minutes), 2M batched records no slower, and a
// resident set of about 310 MiB rather than 340 (serial) or 450-500 (G1).
var jvmFlags = []string{
	"-Xms128m", "-Xmx512m",
	"-XX:+UseSerialGC",
	"-XX:TieredStopAtLevel=1",
	"-XX:+ExitOnOutOfMemoryError",
	"-Djava.awt.headless=true",
}

// toolFlags are the flags of the short-lived storage formatter.
var toolFlags = []string{
	"-Xmx256m",
	"-XX:+UseSerialGC",
	"-XX:TieredStopAtLevel=1",
	"-Djava.awt.headless=true",
}

// ClusterEnabled reports whether FLIGHTD_KAFKA_CLUSTER=1 asks for the
// multi-broker tests.
func ClusterEnabled() bool { return os.Getenv(EnvCluster) == "1" }

// Broker is one Kafka node (broker and controller in one process).
type Broker struct {
	id             int
	clusterID      string
	dir            string // config, data (data/) and log (broker.log)
	port           int    // client listener
	controllerPort int    // KRaft controller listener
	java           string
	lib            string

	mu   sync.Mutex
	proc *process // nil before the first start
}

// Cluster is n Kafka nodes forming one cluster.
type Cluster struct {
	brokers []*Broker
}

// Start starts one Kafka broker (a combined broker and controller KRaft
// node) on free 127.0.0.1 ports with its data in t.TempDir(), and returns
// once it serves. A cleanup stops it when the test ends.
func Start(t testing.TB) *Broker {
	t.Helper()
	return startNodes(t, 1)[0]
}

// StartCluster starts n Kafka nodes, each a broker and a controller, whose
// controllers form one quorum of all n, and returns once every node serves
// and sees all n brokers. Topics default to n replicas and, from n = 3 on,
// min.insync.replicas=2. A cleanup stops them when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("testkafka: StartCluster(%d): need at least one node", n)
	}
	return &Cluster{brokers: startNodes(t, n)}
}

// Addr returns the broker's client listener, host:port.
func (b *Broker) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)) }

// NodeID returns the node's node.id (1-based).
func (b *Broker) NodeID() int { return b.id }

// ClusterID returns the id the node's storage was formatted with.
func (b *Broker) ClusterID() string { return b.clusterID }

// LogPath returns the file that holds the JVM's stdout and stderr, Kafka's
// log at WARN included.
func (b *Broker) LogPath() string { return filepath.Join(b.dir, "broker.log") }

// Len returns the number of nodes.
func (c *Cluster) Len() int { return len(c.brokers) }

// Broker returns node i, 0 <= i < Len() (node.id i+1).
func (c *Cluster) Broker(i int) *Broker { return c.brokers[i] }

// Addrs returns every node's client listener, host:port: the bootstrap list.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.brokers))
	for i, b := range c.brokers {
		addrs[i] = b.Addr()
	}
	return addrs
}

// ClusterID returns the cluster's id.
func (c *Cluster) ClusterID() string { return c.brokers[0].clusterID }

// Kill ends the node at once with SIGKILL, as a crash would, and waits for
// the process. A node that is not running is left alone.
func (b *Broker) Kill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.proc.kill()
}

// Stop ends the node gracefully (SIGTERM; SIGKILL if it has not exited after
// a bound) and waits for the process. A node that is not running is left
// alone.
func (b *Broker) Stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.proc.stop(stopTimeout)
}

// Running reports whether the node's process is running.
func (b *Broker) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.proc.running()
}

// Restart starts the node again on the same ports over the same data (a
// running node is stopped first) and returns once it serves. In a cluster
// that needs a quorum of controllers up.
func (b *Broker) Restart(t testing.TB) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.proc.stop(stopTimeout)
	if err := b.spawn(); err != nil {
		t.Fatalf("testkafka: restart node %d: %v", b.id, err)
	}
	if err := b.waitServing(b.proc, 1, serveTimeout, nil); err != nil {
		b.proc.kill()
		t.Fatalf("testkafka: restart node %d on %s: %v\n%s", b.id, b.Addr(), err, b.logTail())
	}
}

// libDir returns the jars' directory from FLIGHTD_KAFKA_LIB: skips the test
// when unset, fails it when the jars are not there.
func libDir(t testing.TB) string {
	t.Helper()
	lib := os.Getenv(EnvLib)
	if lib == "" {
		t.Skip("Kafka tests need the broker's jars: run `make kafka-broker` and set " + EnvLib +
			"=$PWD/integration/kafka/target/lib (make test does both)")
	}
	abs, err := filepath.Abs(lib)
	if err != nil {
		t.Fatalf("testkafka: %s=%s: %v", EnvLib, lib, err)
	}
	for _, pattern := range []string{"kafka_2.13-*.jar", "kafka-clients-*.jar", "kafka-server-*.jar", "scala-library-*.jar"} {
		if m, _ := filepath.Glob(filepath.Join(abs, pattern)); len(m) == 0 {
			t.Fatalf("testkafka: %s=%s has no %s: run `make kafka-broker`", EnvLib, lib, pattern)
		}
	}
	return abs
}

// javaBin returns $JAVA_HOME/bin/java, else java on PATH.
func javaBin(t testing.TB) string {
	t.Helper()
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", "java")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		t.Fatalf("testkafka: no java (Java 17 or later) on PATH or in JAVA_HOME: %v", err)
	}
	return p
}

// startNodes formats and starts n nodes and waits until all serve; a start
// that lost a port to another process is tried again on new ports.
func startNodes(t testing.TB, n int) []*Broker {
	t.Helper()
	lib := libDir(t)
	java := javaBin(t)
	root := t.TempDir()
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		nodes, err := newNodes(filepath.Join(root, fmt.Sprintf("start%d", attempt)), n, java, lib)
		if err != nil {
			t.Fatalf("testkafka: %v", err)
		}
		if err := formatAll(nodes); err != nil {
			t.Fatalf("testkafka: %v", err)
		}
		t.Cleanup(func() { stopAll(nodes) })
		err = spawnAll(nodes)
		if err == nil {
			err = waitAllServing(nodes)
		}
		if err == nil {
			return nodes
		}
		for _, b := range nodes {
			b.Kill()
		}
		lastErr = err
		line, taken := portTaken(nodes)
		if !taken {
			break
		}
		t.Logf("testkafka: another process took a port before the broker bound it; again on new ports (%s)", line)
	}
	t.Fatalf("testkafka: start %d node(s): %v", n, lastErr)
	return nil
}

// newNodes lays out n nodes under root: free ports, a new cluster id, and
// each node's server.properties and log4j2.properties.
func newNodes(root string, n int, java, lib string) ([]*Broker, error) {
	ports, err := pickPorts(2 * n)
	if err != nil {
		return nil, err
	}
	clusterID := newClusterID()
	nodes := make([]*Broker, n)
	var voters []string
	for i := range nodes {
		nodes[i] = &Broker{
			id:             i + 1,
			clusterID:      clusterID,
			dir:            filepath.Join(root, fmt.Sprintf("node%d", i+1)),
			port:           ports[2*i],
			controllerPort: ports[2*i+1],
			java:           java,
			lib:            lib,
		}
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[2*i+1]))
	}
	for _, b := range nodes {
		if err := os.MkdirAll(filepath.Join(b.dir, "data"), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(b.configPath(), []byte(b.serverProperties(n, strings.Join(voters, ","))), 0o644); err != nil {
			return nil, err
		}
		if err := os.WriteFile(b.log4jPath(), []byte(log4jProperties), 0o644); err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

func (b *Broker) configPath() string { return filepath.Join(b.dir, "server.properties") }
func (b *Broker) log4jPath() string  { return filepath.Join(b.dir, "log4j2.properties") }

// serverProperties is the node's configuration in a cluster of n whose
// controller quorum is voters (id@host:port,...).
func (b *Broker) serverProperties(n int, voters string) string {
	minISR := 1
	if n >= 3 {
		minISR = 2
	}
	var s strings.Builder
	p := func(k string, v any) { fmt.Fprintf(&s, "%s=%v\n", k, v) }
	p("process.roles", "broker,controller")
	p("node.id", b.id)
	// A static quorum: every node knows all voters from its configuration, so
	// formatting needs no --standalone/--initial-controllers and a node
	// restarts on the ports it had.
	p("controller.quorum.voters", voters)
	p("listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", b.port, b.controllerPort))
	p("advertised.listeners", fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", b.port))
	p("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT")
	p("controller.listener.names", "CONTROLLER")
	p("inter.broker.listener.name", "PLAINTEXT")
	p("log.dir", filepath.Join(b.dir, "data"))
	p("num.partitions", 1)
	p("default.replication.factor", n)
	p("min.insync.replicas", minISR)
	p("auto.create.topics.enable", false)
	p("delete.topic.enable", true)
	p("group.initial.rebalance.delay.ms", 0)
	p("offsets.topic.num.partitions", 4)
	p("offsets.topic.replication.factor", n)
	p("transaction.state.log.num.partitions", 4)
	p("transaction.state.log.replication.factor", n)
	p("transaction.state.log.min.isr", minISR)
	// A writer killed in the middle of a transaction holds the partitions'
	// last stable offset back until the transaction times out; the broker
	// looks for timed-out transactions every second, not every ten.
	p("transaction.abort.timed.out.transaction.cleanup.interval.ms", 1000)
	p("share.coordinator.state.topic.num.partitions", 4)
	p("share.coordinator.state.topic.replication.factor", n)
	p("share.coordinator.state.topic.min.isr", minISR)
	// A node killed with SIGKILL is fenced, and so leaves the ISRs, once
	// its session times out: 4 s rather than 9. The same bound holds up its
	// restart, whose new registration the controller refuses (duplicate
	// broker id) until the old session has timed out; the broker retries
	// it every heartbeat interval. A follower that lags is dropped from the
	// ISR after 10 s rather than 30.
	p("broker.heartbeat.interval.ms", 500)
	p("broker.session.timeout.ms", 4000)
	p("replica.lag.time.max.ms", 10000)
	return s.String()
}

// log4jProperties: Kafka's log on stdout (broker.log) at WARN, plus the
// line that says the server started.
const log4jProperties = `status = error
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.out.ref = out
logger.raftserver.name = kafka.server.KafkaRaftServer
logger.raftserver.level = info
`

// newClusterID returns a Kafka Uuid as kafka-storage random-uuid prints it:
// 16 random bytes, URL-safe base64 without padding, not starting with '-'.
func newClusterID() string {
	for {
		var u [16]byte
		_, _ = rand.Read(u[:])
		if id := base64.RawURLEncoding.EncodeToString(u[:]); id[0] != '-' {
			return id
		}
	}
}

// pickPorts picks a node set's ports (a variable for the test of the retry).
var pickPorts = freePorts

// freePorts returns n distinct free 127.0.0.1 ports: each is listened on
// (all at once, so they differ) and closed. Another process can still take
// one before the broker binds it; startNodes then tries again.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// formatAll runs kafka-storage format (kafka.tools.StorageTool) for every
// node, in parallel.
func formatAll(nodes []*Broker) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, b := range nodes {
		wg.Go(func() { errs[i] = b.format() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (b *Broker) format() error {
	logPath := filepath.Join(b.dir, "format.log")
	out, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer out.Close()
	args := append(append([]string{}, toolFlags...),
		"-Dlog4j2.configurationFile="+b.log4jPath(),
		"-cp", filepath.Join(b.lib, "*"),
		"kafka.tools.StorageTool", "format", "--ignore-formatted",
		"--cluster-id", b.clusterID, "--config", b.configPath())
	cmd := exec.Command(b.java, args...)
	cmd.Stdout, cmd.Stderr = out, out
	p, err := startProcess(cmd)
	if err != nil {
		return fmt.Errorf("format node %d: %v", b.id, err)
	}
	select {
	case <-p.done:
	case <-time.After(formatTimeout):
		p.kill()
		return fmt.Errorf("format node %d: not done after %s\n%s", b.id, formatTimeout, tail(logPath))
	}
	if p.err != nil {
		return fmt.Errorf("format node %d: %v\n%s", b.id, p.err, tail(logPath))
	}
	return nil
}

func spawnAll(nodes []*Broker) error {
	for _, b := range nodes {
		b.mu.Lock()
		err := b.spawn()
		b.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// spawn starts the node's JVM, its output appended to broker.log. b.mu held.
func (b *Broker) spawn() error {
	out, err := os.OpenFile(b.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close() // the child has its own descriptor
	fmt.Fprintf(out, "=== testkafka: node %d starts at %s\n", b.id, time.Now().Format(time.RFC3339Nano))
	args := append(append([]string{}, jvmFlags...),
		"-Dlog4j2.configurationFile="+b.log4jPath(),
		"-cp", filepath.Join(b.lib, "*"),
		"kafka.Kafka", b.configPath())
	cmd := exec.Command(b.java, args...)
	cmd.Dir = b.dir
	cmd.Stdout, cmd.Stderr = out, out
	p, err := startProcess(cmd)
	if err != nil {
		return fmt.Errorf("node %d: %v", b.id, err)
	}
	b.proc = p
	return nil
}

// waitAllServing waits, in parallel, until every node serves and sees all
// of them. The first node that fails (a port taken makes it exit at once)
// ends the wait of the others.
func waitAllServing(nodes []*Broker) error {
	errs := make([]error, len(nodes))
	abort := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for i, b := range nodes {
		b.mu.Lock()
		p := b.proc
		b.mu.Unlock()
		wg.Go(func() {
			err := b.waitServing(p, len(nodes), serveTimeout, abort)
			if err == nil || errors.Is(err, errAborted) {
				return
			}
			errs[i] = fmt.Errorf("node %d on %s: %v\n%s", b.id, b.Addr(), err, b.logTail())
			once.Do(func() { close(abort) })
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

var errAborted = errors.New("another node failed")

// waitServing polls the node with metadata requests until it answers with
// this cluster's id and lists itself among at least want live brokers, the
// process exits, abort is closed, or timeout passes.
func (b *Broker) waitServing(p *process, want int, timeout time.Duration, abort <-chan struct{}) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DialTimeout(2*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	deadline := time.Now().Add(timeout)
	lastErr := errors.New("no answer yet")
	for {
		select {
		case <-p.done:
			return fmt.Errorf("the broker exited (%v) before it served; last probe: %v", p.err, lastErr)
		case <-abort:
			return errAborted
		default:
		}
		lastErr = b.probe(cl, want)
		if lastErr == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not serving after %s: %v", timeout, lastErr)
		}
		select {
		case <-p.done:
		case <-abort:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// probe sends one metadata request (no topics) to the node itself.
func (b *Broker) probe(cl *kgo.Client, want int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return errors.New("no seed broker")
	}
	r, err := seeds[0].Request(ctx, req)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.MetadataResponse)
	if resp.ClusterID == nil || *resp.ClusterID != b.clusterID {
		got := "<none>"
		if resp.ClusterID != nil {
			got = *resp.ClusterID
		}
		return fmt.Errorf("answered with cluster id %s, not %s: another server holds the port", got, b.clusterID)
	}
	self := false
	for _, br := range resp.Brokers {
		self = self || int(br.NodeID) == b.id
	}
	if !self || len(resp.Brokers) < want {
		return fmt.Errorf("lists %d live broker(s) (itself: %v), want %d", len(resp.Brokers), self, want)
	}
	return nil
}

// stopAll stops the nodes together (the test cleanup).
func stopAll(nodes []*Broker) {
	var wg sync.WaitGroup
	for _, b := range nodes {
		wg.Go(b.Stop)
	}
	wg.Wait()
}

// portTaken returns the line of a node's log that says it could not bind a
// port, if one does.
func portTaken(nodes []*Broker) (string, bool) {
	for _, b := range nodes {
		data, _ := os.ReadFile(b.LogPath())
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "Address already in use") {
				return fmt.Sprintf("node %d: %s", b.id, strings.TrimSpace(line)), true
			}
		}
	}
	return "", false
}

func (b *Broker) logTail() string {
	return "--- tail of " + b.LogPath() + ":\n" + tail(b.LogPath())
}

// tail returns the last lines of a file (at most 60 lines, 8 KiB).
func tail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(data) > 8<<10 {
		data = data[len(data)-8<<10:]
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 60 {
		lines = lines[len(lines)-60:]
	}
	return strings.Join(lines, "\n")
}

// process is one started child.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has been waited for
	err  error         // Wait's result; read after done
}

// startProcess starts cmd from a goroutine locked to its OS thread for as
// long as the child runs: Pdeathsig fires when the forking thread ends, so
// the thread must not end (or be handed back) while the child lives.
func startProcess(cmd *exec.Cmd) (*process, error) {
	setDeathSignal(cmd)
	p := &process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

func (p *process) running() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *process) kill() {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func (p *process) stop(bound time.Duration) {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(bound):
		p.kill()
	}
}
