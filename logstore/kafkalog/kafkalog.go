package kafkalog

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/flightd/flightd/logstore"
)

// Options configure a Log.
type Options struct {
	// Brokers are the bootstrap brokers, host:port.
	Brokers []string
	// TopicPrefix starts the name of every topic the log creates and the
	// transactional id it writes with. Default "flightd.". Two warehouses
	// sharing a Kafka cluster need different prefixes.
	TopicPrefix string
	// TransactionalID is the Kafka transactional id of the log's writer.
	// Default TopicPrefix + "log-writer", and with a NodeID TopicPrefix +
	// "log-writer." + NodeID. A second writer with the same id fences the
	// first (its appends then fail).
	TransactionalID string
	// NodeID names this node when several write the log (see Shared).
	NodeID string
	// Shared: other nodes write the same topics too, each with its own
	// transactional id. Sync then asks the brokers what they committed,
	// and the log looks for topics other nodes made once a second.
	Shared bool
	// TLS, when set, connects to the brokers over TLS.
	TLS *tls.Config
	// SASL, when set, authenticates to the brokers.
	SASL sasl.Mechanism
	// ReplicationFactor of the topics the log creates; 0 or -1: the
	// brokers' default.replication.factor.
	ReplicationFactor int16
	// MaxRecordBytes is the largest record value the log writes: a larger
	// entry is cut into several records. Default 1 MiB. The topics the log
	// creates allow records of twice that (max.message.bytes).
	MaxRecordBytes int
	// MaxGroupBytes caps the payload bytes of one transaction (group
	// commit). Default 64 MiB.
	MaxGroupBytes int64
	// Timeout bounds each exchange with the brokers that a caller waits
	// for: an append the brokers do not take within it fails with
	// ErrUnavailable. Default 15 s.
	Timeout time.Duration
	// Readers is how many Kafka consumers serve Read at once. Default 4.
	Readers int
	// TableInfo returns the database, name and bucket count of a table
	// id, for the name of the table's topic (see topicName) and its
	// partitions; nil, "" or 0: the id alone, and the buckets written.
	TableInfo func(table string) (database, name string, buckets int)
	// RecoverInBackground: when the brokers cannot be reached at Open,
	// return a Log that keeps trying (Ready says why it is not ready),
	// instead of failing. A server starts so, and serves the lake.
	RecoverInBackground bool
	// Logger receives the log's messages. nil discards.
	Logger *slog.Logger
}

func (o *Options) fill() {
	if o.TopicPrefix == "" {
		o.TopicPrefix = "flightd."
	}
	if o.TransactionalID == "" {
		o.TransactionalID = o.TopicPrefix + "log-writer"
		if o.NodeID != "" {
			o.TransactionalID += "." + o.NodeID
		}
	}
	if o.MaxRecordBytes <= 0 {
		o.MaxRecordBytes = 1 << 20
	}
	if o.MaxGroupBytes <= 0 {
		o.MaxGroupBytes = 64 << 20
	}
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Second
	}
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if o.ReplicationFactor == 0 {
		o.ReplicationFactor = -1
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Log is flightd's log on Apache Kafka. All methods are safe for concurrent
// use.
type Log struct {
	opts   Options
	log    *slog.Logger
	common []kgo.Opt // connection options every client shares
	admin  *kadm.Client
	acl    *kgo.Client // the admin client's

	readers chan *kgo.Client // idle consumers (see Read)
	nReader int              // consumers made so far, guarded by mu

	tail     *kgo.Client   // the tailer: follows every partition (see tailLoop)
	tailDone chan struct{} // closed when tailLoop returns

	// mu guards everything below it; the committer advances high
	// watermarks under it, so a reader holding it sees a consistent cut.
	mu       sync.RWMutex
	tables   map[string]*table // by table id
	byTopic  map[string]*table
	anchors  map[topicPartition]map[int64]int64 // Kafka offset -> row (see anchors)
	queue    []*request
	closed   bool
	advanced chan struct{}

	wake chan struct{} // cap 1
	done chan struct{} // closed when the committer (or a recovery that never succeeded) exits
	// notReady is why the log is not recovered yet (RecoverInBackground);
	// nil once it is. stop ends the recovery's retries. Guarded by mu.
	notReady error
	stop     chan struct{}
	// fenced is set once another writer took the log over (see fence).
	fenced error
	// tailed is closed (and replaced) after every fetch the tailer
	// numbered; tailErr is its last fetch error.
	tailed      chan struct{}
	tailErr     error
	tailRecords int64 // records the tailer took, for tests
	anchorsMade bool

	adminMu   sync.Mutex // serializes Truncate and DropTable
	inflight  sync.WaitGroup
	acks      sync.WaitGroup // groups committed, waiting to be seen (see commit)
	closeOnce sync.Once
	closeErr  error
}

type table struct {
	topic      string
	want       int32 // partitions to create the topic with (the table's buckets)
	partitions int32 // the topic's partitions (0: no topic yet)
	buckets    map[int32]*bucket
	txns       map[uint64]*txnHold // transactions not seen whole yet
}

type bucket struct {
	hw      int64 // exclusive end of the entries readers may see
	start   int64 // log start
	startAt int64 // the Kafka offset of the log start (rows before it: start)
	idx     index // where entries begin in the partition
	t       tailState
}

// Open connects to the brokers, finds the log's topics and recovers every
// bucket's high watermark and log start from its partition. It fails with
// ErrUnavailable when the brokers do not answer within Options.Timeout.
func Open(ctx context.Context, opts Options) (*Log, error) {
	opts.fill()
	if len(opts.Brokers) == 0 {
		return nil, errors.New("kafkalog: no brokers")
	}
	common := []kgo.Opt{
		kgo.SeedBrokers(opts.Brokers...),
		kgo.DialTimeout(min(opts.Timeout, 10*time.Second)),
		kgo.RetryTimeout(opts.Timeout),
		kgo.RequestTimeoutOverhead(opts.Timeout),
	}
	if opts.TLS != nil {
		common = append(common, kgo.DialTLSConfig(opts.TLS))
	}
	if opts.SASL != nil {
		common = append(common, kgo.SASL(opts.SASL))
	}
	acl, err := kgo.NewClient(common...)
	if err != nil {
		return nil, fmt.Errorf("kafkalog: %w", err)
	}
	l := &Log{
		opts:     opts,
		log:      opts.Logger,
		common:   common,
		acl:      acl,
		admin:    kadm.NewClient(acl),
		readers:  make(chan *kgo.Client, opts.Readers),
		tables:   make(map[string]*table),
		byTopic:  make(map[string]*table),
		anchors:  make(map[topicPartition]map[int64]int64),
		advanced: make(chan struct{}),
		tailed:   make(chan struct{}),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		tailDone: make(chan struct{}),
	}
	if l.tail, err = l.newTailer(); err != nil {
		acl.Close()
		return nil, err
	}
	go l.tailLoop()
	var ws [writers]*writer
	closeAll := func() {
		for _, w := range ws {
			if w != nil {
				w.cl.Close()
			}
		}
		l.tail.Close()
		<-l.tailDone
		acl.Close()
	}
	for k := range ws {
		if ws[k], err = newWriter(l, k); err != nil {
			closeAll()
			return nil, err
		}
	}
	err = l.start(ctx, ws)
	switch {
	case err == nil:
		return l, nil
	case errors.Is(err, logstore.ErrUnavailable) && opts.RecoverInBackground:
		l.notReady = err
		l.stop = make(chan struct{})
		l.log.Warn("the Kafka log cannot reach its brokers; retrying in the background: writes and reads of un-tiered rows fail until then", "err", err)
		go l.recoverLoop(ws)
		return l, nil
	default:
		closeAll()
		return nil, err
	}
}

// start initializes the writers, recovers every bucket and starts the
// committer.
func (l *Log) start(ctx context.Context, ws [writers]*writer) error {
	// Initialize every writer first: that aborts a transaction a crashed
	// writer left open, which would hold the partitions' committed end
	// (the last stable offset) where it began.
	ictx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	var err error
	for _, w := range ws {
		if _, _, err = w.cl.ProducerID(ictx); err != nil {
			break
		}
	}
	cancel()
	if err != nil {
		return l.unavailable("initialize the transactional writers", err)
	}
	if err := l.recover(ctx); err != nil {
		return err
	}
	go l.commitLoop(ws)
	if l.opts.Shared {
		go l.discoverLoop()
	}
	return nil
}

// discoverLoop looks for topics and partitions other nodes made, once a
// second, so that streams and metrics see their tables without a Sync.
func (l *Log) discoverLoop() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-tick.C:
		}
		if err := l.discover(context.Background()); err != nil {
			l.log.Debug("looking for other nodes' topics failed", "err", err)
		}
	}
}

// recoverLoop retries start, with backoff, until it succeeds or the log
// closes.
func (l *Log) recoverLoop(ws [writers]*writer) {
	wait := time.Second
	for {
		select {
		case <-l.stop:
			for _, w := range ws {
				w.cl.Close()
			}
			close(l.done)
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
		err := l.start(context.Background(), ws)
		l.mu.Lock()
		l.notReady = err
		if err == nil {
			l.notifyLocked()
		}
		l.mu.Unlock()
		if err == nil {
			l.log.Info("the Kafka log reached its brokers and recovered")
			return
		}
		l.log.Warn("the Kafka log still cannot reach its brokers", "err", err, "retry_in", wait)
	}
}

// Ready returns nil once the log knows every bucket's high watermark, and
// ErrUnavailable, saying why, while a log opened with RecoverInBackground
// has not reached its brokers yet: a reader must not take the empty high
// watermarks for an empty log.
//
// A log another writer took over (see fence) is not ready either: its high
// watermarks no longer follow the log.
func (l *Log) Ready() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.notReady != nil {
		return fmt.Errorf("the log is not recovered yet: %w", l.notReady)
	}
	return l.fenced
}

// unavailable wraps a failure to reach the brokers.
func (l *Log) unavailable(what string, err error) error {
	return fmt.Errorf("%w: %s: the Kafka brokers %s did not answer: %w", logstore.ErrUnavailable, what, strings.Join(l.opts.Brokers, ","), err)
}

// recover finds the log's topics, has the tailer follow every partition
// from its start, and waits until it has numbered them up to their last
// stable offsets: every bucket's high watermark is then known.
func (l *Log) recover(ctx context.Context) error {
	if err := l.discover(ctx); err != nil {
		return err
	}
	l.mu.RLock()
	var topics []string
	for topic := range l.byTopic {
		topics = append(topics, topic)
	}
	l.mu.RUnlock()
	slices.Sort(topics)
	err := l.catchUp(ctx, topics)
	if !l.opts.Shared {
		// One writer numbers its own appends from here (selfNumber).
		l.mu.RLock()
		var ts []*table
		for _, t := range l.byTopic {
			ts = append(ts, t)
		}
		l.mu.RUnlock()
		l.pause(ts)
	}
	return err
}

func (l *Log) enter() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return logstore.ErrClosed
	}
	if l.notReady != nil {
		return fmt.Errorf("the log is not recovered yet: %w", l.notReady)
	}
	l.inflight.Add(1)
	return nil
}

func (l *Log) leave() { l.inflight.Done() }

func (l *Log) notifyLocked() {
	close(l.advanced)
	l.advanced = make(chan struct{})
}

// Close waits for queued appends and running calls, then closes the
// clients. Later calls return the first call's result.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.notifyLocked()
		if l.stop != nil {
			close(l.stop)
		}
		l.mu.Unlock()
		l.signal()
		<-l.done
		l.acks.Wait()
		l.inflight.Wait()
		l.tail.Close()
		<-l.tailDone
		close(l.readers)
		for cl := range l.readers {
			cl.Close()
		}
		l.acl.Close()
	})
	return l.closeErr
}

// Describe names the brokers and the topic prefix.
func (l *Log) Describe() logstore.Description {
	return logstore.Description{Kind: "kafka", Location: "kafka://" + strings.Join(l.opts.Brokers, ",") + " (topics " + l.opts.TopicPrefix + "*)", ID: ID(l.opts.TopicPrefix)}
}

func (l *Log) stateLocked(b logstore.Bucket) *bucket {
	if t := l.tables[b.Table]; t != nil {
		return t.buckets[b.Bucket]
	}
	return nil
}

// HighWatermark returns the bucket's exclusive committed end (0 if unknown).
func (l *Log) HighWatermark(b logstore.Bucket) int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if st := l.stateLocked(b); st != nil {
		return st.hw
	}
	return 0
}

// HighWatermarks returns every bucket of the table with a log above 0, as
// one consistent cut: a transaction is in all its buckets or in none.
func (l *Log) HighWatermarks(id string) map[int32]int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make(map[int32]int64)
	if t := l.tables[id]; t != nil {
		for p, st := range t.buckets {
			if st.hw > 0 {
				out[p] = st.hw
			}
		}
	}
	return out
}

// Buckets lists, ascending, the buckets of the table with a log above 0.
func (l *Log) Buckets(id string) []int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []int32
	if t := l.tables[id]; t != nil {
		for p, st := range t.buckets {
			if st.hw > 0 {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Start returns the bucket's log start.
func (l *Log) Start(b logstore.Bucket) int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if st := l.stateLocked(b); st != nil {
		return st.start
	}
	return 0
}

// Advanced is closed the next time high watermarks advance, a table is
// dropped or the log closes.
func (l *Log) Advanced() <-chan struct{} {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.advanced
}

// ID is the logstore.Description.ID of the Kafka log with topic prefix
// prefix.
func ID(prefix string) string { return "kafka:" + prefix }

// CollectGarbage does nothing: Kafka deletes the segments below what
// Truncate deleted by itself.
func (l *Log) CollectGarbage() error { return nil }

var _ logstore.Log = (*Log)(nil)
