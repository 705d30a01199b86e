package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Options configure a Member.
type Options struct {
	// Brokers are the bootstrap brokers, host:port.
	Brokers []string
	// KafkaOpts are added to every Kafka client the member makes (TLS,
	// SASL and the like), after its own connection options.
	KafkaOpts []kgo.Opt
	// Prefix starts the names of the member's topics and group, as it
	// starts the log's topics (see OwnersTopic, NodesTopic). Default
	// "flightd.".
	Prefix string
	// NodeID names the node in the group (its group.instance.id) and in
	// the node records: required, 1 to 64 of A-Z a-z 0-9 . _ -, unique in
	// the cluster, and best kept across restarts.
	NodeID string
	// Advertise is the node's Flight address for clients, e.g.
	// "grpc://10.0.0.5:31337", published in its record.
	Advertise string
	// SessionTimeout is the group's session timeout: a node that does not
	// heartbeat within it loses its slots. Default 10 s; the brokers'
	// group.min.session.timeout.ms and group.max.session.timeout.ms
	// (6 s and 30 min by default) bound it. It also bounds each exchange
	// with the brokers outside the group protocol (creating topics,
	// publishing a record, leaving).
	SessionTimeout time.Duration
	// Heartbeat is how often the node heartbeats the group and publishes
	// its record. Default the smaller of 1 s and SessionTimeout/3; at
	// most SessionTimeout/3.
	Heartbeat time.Duration
	// Slots is the number of partitions of the owners topic when Join
	// creates it. Default 64. An existing topic keeps its count.
	Slots int32
	// Replication is the replication factor of the topics Join creates;
	// 0 or -1: the brokers' default.replication.factor.
	Replication int16
	// Pins, when set, returns the oldest snapshot of each table (by table
	// id) that a running read of this node uses; it is published with the
	// node's record, so that the node that expires a table's snapshots
	// keeps them (PinnedElsewhere).
	Pins func() map[string]int64
	// Logf receives the member's messages: slots assigned and given up,
	// sessions lost, errors of the group and of the node records (each
	// once until it changes). nil discards them.
	Logf func(format string, args ...any)
}

const (
	defaultPrefix         = "flightd."
	defaultSessionTimeout = 10 * time.Second
	defaultSlots          = 64
	// staleAfter session timeouts without a record, a node is no longer
	// listed (Nodes) nor believed (Owner).
	staleAfter = 3
)

var (
	nodeIDRe = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	topicRe  = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
)

// Errors Ready wraps.
var (
	// ErrNotMember: the node is not in the group, or cannot tell that it
	// still is; it owns nothing. Every error Ready returns wraps it.
	ErrNotMember = errors.New("cluster: this node is not a member of the cluster")
	// ErrFenced: another process joined with this node's id.
	ErrFenced = errors.New("another process joined the cluster with this node id")
	// ErrClosed: the member was closed.
	ErrClosed = errors.New("the member is closed")
)

// OwnersTopic is the topic whose partitions are the slots, and the name of
// the consumer group that assigns them.
func OwnersTopic(prefix string) string { return prefix + "_flightd_owners" }

// NodesTopic is the compacted topic of the node records.
func NodesTopic(prefix string) string { return prefix + "_flightd_nodes" }

func (o *Options) fill() error {
	if o.Prefix == "" {
		o.Prefix = defaultPrefix
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = defaultSessionTimeout
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = min(time.Second, o.SessionTimeout/3)
	}
	if o.Slots == 0 {
		o.Slots = defaultSlots
	}
	if o.Replication == 0 {
		o.Replication = -1
	}
	switch {
	case o.NodeID == "":
		return errors.New("cluster: Options.NodeID is required: it names this node in the group and in the node records (1 to 64 of A-Z a-z 0-9 . _ -)")
	case !nodeIDRe.MatchString(o.NodeID):
		return fmt.Errorf("cluster: invalid node id %q: use 1 to 64 of the characters A-Z a-z 0-9 . _ -", o.NodeID)
	case len(o.Brokers) == 0:
		return errors.New("cluster: no brokers")
	case !topicRe.MatchString(o.Prefix) || len(NodesTopic(o.Prefix)) > 249 || len(OwnersTopic(o.Prefix)) > 249:
		return fmt.Errorf("cluster: invalid topic prefix %q: topic names take A-Z a-z 0-9 . _ - and at most 249 characters", o.Prefix)
	case o.SessionTimeout < 0:
		return fmt.Errorf("cluster: negative session timeout %s", o.SessionTimeout)
	case o.Heartbeat <= 0 || o.Heartbeat > o.SessionTimeout/3:
		return fmt.Errorf("cluster: heartbeat %s: it must be positive and at most a third of the session timeout %s", o.Heartbeat, o.SessionTimeout)
	case o.Slots < 0:
		return fmt.Errorf("cluster: negative slot count %d", o.Slots)
	}
	return nil
}

// Node is a node of the cluster as its latest record describes it.
type Node struct {
	ID      string
	Address string
	// Started is when the node joined; LastHeartbeat when it published
	// the record (both its clock).
	Started, LastHeartbeat time.Time
	// Slots the node owned then, ascending.
	Slots []int32
}

// record is the JSON value of a node record.
type record struct {
	ID        string    `json:"id"`
	Address   string    `json:"address,omitempty"`
	Started   time.Time `json:"started"`
	Heartbeat time.Time `json:"heartbeat"`
	Slots     []int32   `json:"slots"`
	// Pins: table id -> the oldest snapshot a read of the node uses.
	Pins map[string]int64 `json:"pins,omitempty"`
}

// Member is a node's membership in the cluster. All methods are safe for
// concurrent use.
type Member struct {
	o       Options
	now     func() time.Time
	slots   int32
	owners  string // topic and group
	nodesT  string
	started time.Time

	group *kgo.Client // the owners group member
	data  *kgo.Client // publishes and reads the node records; admin
	admin *kadm.Client

	ctx      context.Context // ends the loops
	cancel   context.CancelFunc
	loops    sync.WaitGroup // every goroutine but the publisher
	pubDone  chan struct{}
	pubNow   chan struct{} // cap 1
	joined   chan struct{} // closed at the first assignment
	joinOnce sync.Once

	mu          sync.Mutex
	owned       map[int32]bool // what the group assigned us
	inGroup     bool           // between an assignment and a lost session
	lastContact time.Time      // when the coordinator last heard us, at the latest (see contact)
	groupErr    error          // what ended the last group session
	fenced      error
	closed      bool
	changed     chan struct{}
	reported    []int32 // the owned slots Changed last stood for
	nodes       map[string]record
	readTo      int64         // next offset of the nodes partition to read
	progress    chan struct{} // closed and replaced as records are read
	published   time.Time     // heartbeat of our last acknowledged record

	closeOnce sync.Once
	closeErr  error
}

// newMember makes a member with no clients (Join adds them).
func newMember(o Options) *Member {
	ctx, cancel := context.WithCancel(context.Background())
	m := &Member{
		o:        o,
		now:      time.Now,
		slots:    o.Slots,
		owners:   OwnersTopic(o.Prefix),
		nodesT:   NodesTopic(o.Prefix),
		ctx:      ctx,
		cancel:   cancel,
		pubDone:  make(chan struct{}),
		pubNow:   make(chan struct{}, 1),
		joined:   make(chan struct{}),
		owned:    map[int32]bool{},
		changed:  make(chan struct{}),
		nodes:    map[string]record{},
		progress: make(chan struct{}),
	}
	m.started = m.now()
	return m
}

// Join makes the node a member of the cluster: it creates the topics that
// are missing, joins the group, starts publishing the node's record and
// reading the others', and returns once the node is in the group and has
// read the records up to its own first one. ctx bounds the wait; on failure
// nothing is left running.
func Join(ctx context.Context, o Options) (*Member, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
	m := newMember(o)
	var err error
	if m.data, err = kgo.NewClient(append(m.clientOpts(),
		kgo.RetryTimeout(o.SessionTimeout),
		kgo.RequiredAcks(kgo.AllISRAcks()), // and idempotent, franz-go's default
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
		kgo.RecordDeliveryTimeout(o.SessionTimeout),
	)...); err != nil {
		m.cancel()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	m.admin = kadm.NewClient(m.data)
	fail := func(err error) (*Member, error) {
		m.teardown(m.group != nil) // leave, if it may have joined
		return nil, err
	}
	if m.slots, err = m.ensureTopic(ctx, m.owners, o.Slots, nil); err != nil {
		return fail(err)
	}
	if m.slots != o.Slots {
		m.logf("cluster: topic %s has %d partitions: %d slots, not %d", m.owners, m.slots, m.slots, o.Slots)
	}
	if _, err = m.ensureTopic(ctx, m.nodesT, 1, nodesConfigs()); err != nil {
		return fail(err)
	}
	m.data.AddConsumePartitions(map[string]map[int32]kgo.Offset{m.nodesT: {0: kgo.NewOffset().AtStart()}})
	m.loops.Go(m.readLoop)

	if m.group, err = kgo.NewClient(append(m.clientOpts(),
		kgo.ConsumerGroup(m.owners),
		kgo.ConsumeTopics(m.owners),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.InstanceID(o.NodeID),
		kgo.SessionTimeout(o.SessionTimeout),
		kgo.HeartbeatInterval(o.Heartbeat),
		kgo.RebalanceTimeout(o.SessionTimeout),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.OnPartitionsAssigned(m.onAssigned),
		kgo.OnPartitionsRevoked(m.onRevoked),
		kgo.OnPartitionsLost(m.onLost),
		kgo.WithHooks(groupHooks{m}),
	)...); err != nil {
		return fail(fmt.Errorf("cluster: %w", err))
	}
	m.loops.Go(m.pollLoop)
	m.loops.Go(m.tickLoop)
	go m.publishLoop()

	// Announce the node, and read the records back to that one.
	at, err := m.publish(ctx)
	if err != nil {
		return fail(fmt.Errorf("cluster: join as %q: publish the node record to %s on %s: %w", o.NodeID, m.nodesT, m.brokers(), err))
	}
	joined := m.joined
	for {
		m.mu.Lock()
		read, progress := m.readTo > at, m.progress
		m.mu.Unlock()
		if read && joined == nil {
			return m, nil
		}
		select {
		case <-joined:
			joined = nil
		case <-progress:
		case <-ctx.Done():
			why := m.Ready()
			if joined == nil && !read {
				why = fmt.Errorf("the node records were not read back to this node's own from %s", m.nodesT)
			}
			m.teardown(true)
			return nil, fmt.Errorf("cluster: join group %s as %q on %s: %w (%v)", m.owners, o.NodeID, m.brokers(), ctx.Err(), why)
		}
	}
}

// clientOpts are the connection options every client shares.
func (m *Member) clientOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(m.o.Brokers...),
		kgo.ClientID("flightd-cluster-" + m.o.NodeID),
		kgo.DialTimeout(min(m.o.SessionTimeout/2, 10*time.Second)),
	}
	return append(opts, m.o.KafkaOpts...)
}

func (m *Member) logf(format string, args ...any) {
	if m.o.Logf != nil {
		m.o.Logf(format, args...)
	}
}

func (m *Member) brokers() string { return strings.Join(m.o.Brokers, ",") }

// ID returns the node id.
func (m *Member) ID() string { return m.o.NodeID }

// Slots returns the number of slots.
func (m *Member) Slots() int32 { return m.slots }

// Slot returns the table's slot.
func (m *Member) Slot(tableID string) int32 { return SlotOf(tableID, m.slots) }

// Owns reports whether this node owns the table's slot now: the group
// assigned it the slot and the node is Ready.
func (m *Member) Owns(tableID string) bool {
	s := m.Slot(tableID)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owned[s] && m.readyLocked(m.now()) == nil
}

// OwnedSlots returns the slots Owns reports true for, ascending.
func (m *Member) OwnedSlots() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.effectiveLocked(m.now())
}

// Owner returns the node that owns the table's slot: this node if Owns says
// so, else the node among the others whose latest record, less than three
// session timeouts old, lists the slot (the latest heartbeat wins). ok is
// false when no record lists it.
func (m *Member) Owner(tableID string) (nodeID string, ok bool) {
	s := m.Slot(tableID)
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if m.owned[s] && m.readyLocked(now) == nil {
		return m.o.NodeID, true
	}
	var best record
	for id, r := range m.nodes {
		if id == m.o.NodeID || m.staleLocked(r, now) || !slices.Contains(r.Slots, s) {
			continue
		}
		if !ok || r.Heartbeat.After(best.Heartbeat) || r.Heartbeat.Equal(best.Heartbeat) && r.ID < best.ID {
			best, ok = r, true
		}
	}
	return best.ID, ok
}

// PinnedElsewhere returns the oldest snapshot of the table that a read on
// another node used when it last published its record (0: none). Records
// are published every Options.Heartbeat: a read that began since is not
// in it yet.
func (m *Member) PinnedElsewhere(tableID string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var oldest int64
	for id, r := range m.nodes {
		if id == m.o.NodeID || m.staleLocked(r, now) {
			continue
		}
		if sid := r.Pins[tableID]; sid > 0 && (oldest == 0 || sid < oldest) {
			oldest = sid
		}
	}
	return oldest
}

// Nodes returns the nodes whose latest record is less than three session
// timeouts old, and this node, sorted by id.
func (m *Member) Nodes() []Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	out := []Node{{ID: m.o.NodeID, Address: m.o.Advertise, Started: m.started, LastHeartbeat: m.published, Slots: m.effectiveLocked(now)}}
	for id, r := range m.nodes {
		if id != m.o.NodeID && !m.staleLocked(r, now) {
			out = append(out, Node{ID: r.ID, Address: r.Address, Started: r.Started, LastHeartbeat: r.Heartbeat, Slots: slices.Clone(r.Slots)})
		}
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (m *Member) staleLocked(r record, now time.Time) bool {
	return now.Sub(r.Heartbeat) >= staleAfter*m.o.SessionTimeout
}

// Changed returns a channel closed when the slots Owns reports change
// (see the package documentation).
func (m *Member) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// Ready returns nil while the node is in the group and the coordinator
// answered it less than a session timeout ago; otherwise an error wrapping
// ErrNotMember that says why. While it is not nil, Owns is false for every
// table.
func (m *Member) Ready() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.readyLocked(m.now())
}

func (m *Member) readyLocked(now time.Time) error {
	switch {
	case m.closed:
		return fmt.Errorf("%w: %w", ErrNotMember, ErrClosed)
	case m.fenced != nil:
		return m.fenced
	case !m.inGroup && m.groupErr == nil:
		return fmt.Errorf("%w: node %q is joining group %s on the Kafka brokers %s (%s)", ErrNotMember, m.o.NodeID, m.owners, m.brokers(), m.sinceLocked(now))
	case !m.inGroup:
		return fmt.Errorf("%w: node %q lost its session in group %s on the Kafka brokers %s and is rejoining (%s): %w", ErrNotMember, m.o.NodeID, m.owners, m.brokers(), m.sinceLocked(now), m.groupErr)
	case now.Sub(m.lastContact) >= m.o.SessionTimeout:
		return fmt.Errorf("%w: node %q is cut off from the Kafka brokers %s: %s, not within the session timeout %s, so the group may have given its slots to others",
			ErrNotMember, m.o.NodeID, m.brokers(), m.sinceLocked(now), m.o.SessionTimeout)
	}
	return nil
}

func (m *Member) sinceLocked(now time.Time) string {
	if m.lastContact.IsZero() {
		return "the group coordinator has not answered a heartbeat yet"
	}
	return fmt.Sprintf("the group coordinator last answered a heartbeat %s ago", now.Sub(m.lastContact).Round(time.Millisecond))
}

// effectiveLocked returns the slots Owns reports true for, ascending.
func (m *Member) effectiveLocked(now time.Time) []int32 {
	if m.readyLocked(now) != nil {
		return nil
	}
	out := make([]int32, 0, len(m.owned))
	for s, ok := range m.owned {
		if ok {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// recheckLocked closes Changed, and asks for a record, when the slots Owns
// reports differ from those Changed last stood for.
func (m *Member) recheckLocked() {
	now := m.effectiveLocked(m.now())
	if slices.Equal(now, m.reported) {
		return
	}
	m.reported = now
	close(m.changed)
	m.changed = make(chan struct{})
	select {
	case m.pubNow <- struct{}{}:
	default:
	}
}

// The group's callbacks. franz-go calls them one at a time; the group goes
// on only once they return, so a revoked slot is out of the owned set
// before another node can be given it.

func (m *Member) onAssigned(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
	m.mu.Lock()
	for _, p := range ps[m.owners] {
		m.owned[p] = true
	}
	m.inGroup = true
	m.groupErr = nil
	m.recheckLocked()
	m.mu.Unlock()
	m.joinOnce.Do(func() { close(m.joined) })
	if len(ps[m.owners]) > 0 {
		m.logf("cluster: node %q was assigned slots %v", m.o.NodeID, ps[m.owners])
	}
}

func (m *Member) onRevoked(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
	m.mu.Lock()
	for _, p := range ps[m.owners] {
		delete(m.owned, p)
	}
	m.recheckLocked()
	m.mu.Unlock()
	if len(ps[m.owners]) > 0 {
		m.logf("cluster: node %q gave up slots %v", m.o.NodeID, ps[m.owners])
	}
}

func (m *Member) onLost(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
	m.mu.Lock()
	clear(m.owned)
	was := m.inGroup
	m.inGroup = false
	m.recheckLocked()
	m.mu.Unlock()
	if was {
		m.logf("cluster: node %q lost its session in the group, and slots %v", m.o.NodeID, ps[m.owners])
	}
}

// contact records that the coordinator heard the node no earlier than at.
func (m *Member) contact(at time.Time) {
	m.mu.Lock()
	if at.After(m.lastContact) {
		m.lastContact = at
	}
	m.mu.Unlock()
}

// groupHooks watch the group client's exchanges with the coordinator.
type groupHooks struct{ m *Member }

// OnBrokerE2E: a JoinGroup, SyncGroup or Heartbeat that a broker answered
// means the coordinator heard the node no earlier than when the request
// started to be written. The answer's error code is not visible here: an
// answer that says the node is no longer a member makes franz-go call
// OnPartitionsLost at once, which empties the owned set.
func (h groupHooks) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	switch kmsg.Key(key) {
	case kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat:
	default:
		return
	}
	if e.Err() == nil {
		h.m.contact(h.m.now().Add(-e.DurationE2E()))
	}
}

// OnGroupManageError: the error that ended a group session (franz-go has
// called OnPartitionsLost just before). A fenced instance id means another
// process took the node id over.
func (h groupHooks) OnGroupManageError(err error) {
	m := h.m
	m.mu.Lock()
	defer m.mu.Unlock()
	m.groupErr = err
	if errors.Is(err, kerr.FencedInstanceID) && m.fenced == nil {
		m.fenced = fmt.Errorf("%w: %w: node %q left group %s for good: another process joined it with the same node id (node ids must be unique; restart this one with another)", ErrNotMember, ErrFenced, m.o.NodeID, m.owners)
		m.logf("%v", m.fenced)
		m.recheckLocked()
	}
}

// pollLoop polls the group client, which the group needs, and stops it for
// good once it is fenced.
func (m *Member) pollLoop() {
	var last string
	for m.ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(m.ctx, m.o.SessionTimeout)
		fs := m.group.PollFetches(ctx)
		cancel()
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, kgo.ErrClientClosed) {
				m.logOnce(&last, "cluster: node %q: group %s: %v", m.o.NodeID, m.owners, err)
			}
		})
		m.mu.Lock()
		fenced := m.fenced != nil
		m.mu.Unlock()
		if fenced {
			// Stop the group management, so that it does not rejoin
			// and fence the newer process in turn. With an instance
			// id franz-go sends no LeaveGroup.
			done, cancel := context.WithCancel(context.Background())
			cancel() // a done context: leave at once, do not wait for the answer
			_ = m.group.LeaveGroupContext(done)
			return
		}
	}
}

// tickLoop applies the time rule every Heartbeat and asks for a record.
func (m *Member) tickLoop() {
	t := time.NewTicker(m.o.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-t.C:
		}
		m.mu.Lock()
		m.recheckLocked()
		m.mu.Unlock()
		select {
		case m.pubNow <- struct{}{}:
		default:
		}
	}
}

// publishLoop publishes the node record when asked, one at a time.
func (m *Member) publishLoop() {
	defer close(m.pubDone)
	failing := false
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-m.pubNow:
		}
		_, err := m.publish(m.ctx)
		switch {
		case err != nil && !failing && m.ctx.Err() == nil:
			m.logf("cluster: node %q cannot publish its record to %s on %s: %v", m.o.NodeID, m.nodesT, m.brokers(), err)
		case err == nil && failing:
			m.logf("cluster: node %q publishes its record again", m.o.NodeID)
		}
		failing = err != nil
	}
}

// publish writes the node record and returns its offset.
func (m *Member) publish(ctx context.Context) (int64, error) {
	m.mu.Lock()
	if m.fenced != nil || m.closed {
		m.mu.Unlock()
		return 0, nil
	}
	now := m.now()
	rec := record{ID: m.o.NodeID, Address: m.o.Advertise, Started: m.started, Heartbeat: now, Slots: m.effectiveLocked(now)}
	m.mu.Unlock()
	if m.o.Pins != nil {
		rec.Pins = m.o.Pins()
	}
	if rec.Slots == nil {
		rec.Slots = []int32{}
	}
	val, err := json.Marshal(rec)
	if err != nil {
		return 0, err
	}
	r := &kgo.Record{Topic: m.nodesT, Partition: 0, Key: []byte(m.o.NodeID), Value: val}
	pctx, cancel := context.WithTimeout(ctx, m.o.SessionTimeout)
	defer cancel()
	if err := m.data.ProduceSync(pctx, r).FirstErr(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	if rec.Heartbeat.After(m.published) {
		m.published = rec.Heartbeat
	}
	m.mu.Unlock()
	return r.Offset, nil
}

// readLoop reads the node records.
func (m *Member) readLoop() {
	var last string
	for {
		fs := m.data.PollFetches(m.ctx)
		if m.ctx.Err() != nil {
			return
		}
		fs.EachError(func(t string, p int32, err error) {
			m.logOnce(&last, "cluster: node %q: read %s: %v", m.o.NodeID, t, err)
		})
		m.mu.Lock()
		fs.EachRecord(m.applyLocked)
		close(m.progress)
		m.progress = make(chan struct{})
		m.mu.Unlock()
	}
}

// applyLocked takes one node record in.
func (m *Member) applyLocked(r *kgo.Record) {
	if r.Topic != m.nodesT || r.Partition != 0 {
		return
	}
	m.readTo = max(m.readTo, r.Offset+1)
	id := string(r.Key)
	if r.Value == nil {
		delete(m.nodes, id)
		return
	}
	var rec record
	if err := json.Unmarshal(r.Value, &rec); err != nil || rec.ID != id {
		m.logf("cluster: skipping a bad node record at offset %d of %s (key %q): %v", r.Offset, m.nodesT, id, err)
		return
	}
	slices.Sort(rec.Slots)
	m.nodes[id] = rec
}

// Close leaves the cluster: the node stops owning anything, stops its
// group member, removes it from the group by its instance id (so that the
// others take its slots at once), and writes a tombstone for its record.
// With the brokers unreachable, it gives up on each of the last two after
// a session timeout, and says so. Later calls return the first call's
// result.
func (m *Member) Close() error {
	m.closeOnce.Do(func() { m.closeErr = m.teardown(true) })
	return m.closeErr
}

// teardown stops everything; leave: remove the node from the group and
// delete its record (unless it was fenced).
func (m *Member) teardown(leave bool) error {
	m.mu.Lock()
	m.closed = true
	clear(m.owned)
	m.recheckLocked()
	leave = leave && m.fenced == nil
	m.mu.Unlock()
	m.cancel()
	if m.group != nil {
		m.group.Close() // franz-go sends no LeaveGroup for a static member
	}
	var errs []error
	if leave && m.group != nil {
		ctx, cancel := context.WithTimeout(context.Background(), m.o.SessionTimeout)
		resp, err := m.admin.LeaveGroup(ctx, kadm.LeaveGroup(m.owners).InstanceIDs(m.o.NodeID).Reason("flightd node closing"))
		cancel()
		if err == nil {
			err = resp.Error()
		}
		if err != nil && !errors.Is(err, kerr.UnknownMemberID) {
			errs = append(errs, fmt.Errorf("cluster: leave group %s as %q on %s: %w (the others take its slots after the session timeout)", m.owners, m.o.NodeID, m.brokers(), err))
		}
	}
	if m.group != nil { // the publisher runs
		<-m.pubDone
	}
	if leave && m.group != nil {
		ctx, cancel := context.WithTimeout(context.Background(), m.o.SessionTimeout)
		err := m.data.ProduceSync(ctx, &kgo.Record{Topic: m.nodesT, Partition: 0, Key: []byte(m.o.NodeID)}).FirstErr()
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster: delete the record of node %q in %s on %s: %w", m.o.NodeID, m.nodesT, m.brokers(), err))
		}
	}
	m.loops.Wait()
	if m.data != nil {
		m.data.Close()
	}
	return errors.Join(errs...)
}

// logOnce logs a message unless it is the one it logged last (last is the
// caller's).
func (m *Member) logOnce(last *string, format string, args ...any) {
	if msg := fmt.Sprintf(format, args...); msg != *last {
		*last = msg
		m.logf("%s", msg)
	}
}
