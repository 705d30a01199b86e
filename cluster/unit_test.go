package cluster

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestSlotOf(t *testing.T) {
	// FNV-1a 32: "" hashes to the offset basis 0x811c9dc5, "a" to
	// 0xe40c292c, "orders" to 845059820.
	require.EqualValues(t, 0x811c9dc5%64, SlotOf("", 64))
	require.EqualValues(t, 0xe40c292c%64, SlotOf("a", 64))
	require.EqualValues(t, 845059820%7, SlotOf("orders", 7))
	seen := map[int32]int{}
	for i := range 10000 {
		s := SlotOf("table-"+strconv.Itoa(i), 64)
		require.True(t, s >= 0 && s < 64, "slot %d", s)
		seen[s]++
	}
	require.Len(t, seen, 64, "every slot gets tables")
	for s, n := range seen {
		require.True(t, n > 10000/64/2, "slot %d has %d of 10000 tables", s, n)
	}
}

func TestOptions(t *testing.T) {
	ok := Options{Brokers: []string{"127.0.0.1:1"}, NodeID: "node-1.a_B"}
	require.NoError(t, ok.fill())
	require.Equal(t, "flightd.", ok.Prefix)
	require.Equal(t, 10*time.Second, ok.SessionTimeout)
	require.Equal(t, time.Second, ok.Heartbeat)
	require.EqualValues(t, 64, ok.Slots)
	require.EqualValues(t, -1, ok.Replication)
	require.Equal(t, "flightd._flightd_owners", OwnersTopic(ok.Prefix))
	require.Equal(t, "flightd._flightd_nodes", NodesTopic(ok.Prefix))

	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Brokers: []string{"b:9092"}}, "Options.NodeID is required"},
		{Options{Brokers: []string{"b:9092"}, NodeID: "node 1"}, `invalid node id "node 1": use 1 to 64 of the characters A-Z a-z 0-9 . _ -`},
		{Options{Brokers: []string{"b:9092"}, NodeID: "n/1"}, `invalid node id "n/1"`},
		{Options{Brokers: []string{"b:9092"}, NodeID: "é"}, `invalid node id "é"`},
		{Options{Brokers: []string{"b:9092"}, NodeID: strings.Repeat("n", 65)}, "invalid node id"},
		{Options{NodeID: "n"}, "no brokers"},
		{Options{Brokers: []string{"b:9092"}, NodeID: "n", Prefix: "a b"}, "invalid topic prefix"},
		{Options{Brokers: []string{"b:9092"}, NodeID: "n", SessionTimeout: 6 * time.Second, Heartbeat: 3 * time.Second}, "at most a third of the session timeout"},
	} {
		err := c.o.fill()
		require.ErrorContains(t, err, c.want)
	}
	o := Options{Brokers: []string{"b:9092"}, NodeID: strings.Repeat("n", 64)}
	require.NoError(t, o.fill(), "64 characters are allowed")

	// Join refuses bad options before it dials anything.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := Join(ctx, Options{Brokers: []string{"127.0.0.1:1"}, NodeID: "bad id"})
	require.ErrorContains(t, err, `invalid node id "bad id"`)
	require.NoError(t, ctx.Err())
}

// fakeClock is a clock the test sets.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// fakeMember is a member with no Kafka clients, on a fake clock.
func fakeMember(t *testing.T, id string) (*Member, *fakeClock) {
	o := Options{Brokers: []string{"broker-a:9092", "broker-b:9092"}, NodeID: id, Advertise: "grpc://" + id, SessionTimeout: 10 * time.Second, Slots: 8}
	require.NoError(t, o.fill())
	m := newMember(o)
	t.Cleanup(m.cancel)
	c := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	m.now = c.now
	m.started = c.now()
	return m, c
}

// tableIn returns a table id of the slot.
func tableIn(slot, slots int32) string {
	for i := 0; ; i++ {
		if id := "table-" + strconv.Itoa(i); SlotOf(id, slots) == slot {
			return id
		}
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (m *Member) recheck() { m.mu.Lock(); m.recheckLocked(); m.mu.Unlock() }

func TestOwnershipFollowsTheGroupAndTheClock(t *testing.T) {
	m, clock := fakeMember(t, "n1")
	ctx := context.Background()
	t0 := clock.now()
	tab := func(s int32) string { return tableIn(s, 8) }

	require.ErrorIs(t, m.Ready(), ErrNotMember)
	require.ErrorContains(t, m.Ready(), "is joining group flightd._flightd_owners on the Kafka brokers broker-a:9092,broker-b:9092")
	require.False(t, m.Owns(tab(0)))

	ch := m.Changed()
	m.contact(t0) // the SyncGroup answer
	m.onAssigned(ctx, nil, map[string][]int32{m.owners: {0, 1, 2}})
	require.True(t, closed(ch), "an assignment closes Changed")
	require.NoError(t, m.Ready())
	require.Equal(t, []int32{0, 1, 2}, m.OwnedSlots())
	require.True(t, m.Owns(tab(1)))
	require.False(t, m.Owns(tab(3)))
	owner, ok := m.Owner(tab(1))
	require.True(t, ok)
	require.Equal(t, "n1", owner)

	// The time rule: owned until a session timeout has passed since the
	// coordinator last answered.
	ch = m.Changed()
	clock.set(t0.Add(10*time.Second - time.Nanosecond))
	m.recheck()
	require.NoError(t, m.Ready())
	require.True(t, m.Owns(tab(1)))
	require.False(t, closed(ch))
	clock.set(t0.Add(10 * time.Second))
	err := m.Ready()
	require.ErrorIs(t, err, ErrNotMember)
	require.ErrorContains(t, err, `node "n1" is cut off from the Kafka brokers broker-a:9092,broker-b:9092: the group coordinator last answered a heartbeat 10s ago, not within the session timeout 10s`)
	require.False(t, m.Owns(tab(1)), "not ready: owns nothing")
	require.Empty(t, m.OwnedSlots())
	_, ok = m.Owner(tab(1))
	require.False(t, ok, "no record claims it, and this node does not own it now")
	require.False(t, closed(ch), "Changed waits for the next check")
	m.recheck()
	require.True(t, closed(ch), "the check sees the node turn not ready")
	require.Len(t, m.Nodes(), 1)
	require.Empty(t, m.Nodes()[0].Slots)

	// A heartbeat answered again: owned again.
	ch = m.Changed()
	m.contact(t0.Add(9 * time.Second))
	require.NoError(t, m.Ready())
	require.True(t, m.Owns(tab(1)))
	m.recheck()
	require.True(t, closed(ch))
	m.contact(t0) // an older answer read late does not move it back
	require.NoError(t, m.Ready())

	// Revocation takes the slots out before the callback returns.
	ch = m.Changed()
	m.onRevoked(ctx, nil, map[string][]int32{m.owners: {1}})
	require.False(t, m.Owns(tab(1)))
	require.True(t, m.Owns(tab(2)))
	require.True(t, closed(ch))
	ch = m.Changed()
	m.onRevoked(ctx, nil, map[string][]int32{}) // the end of a session, nothing revoked
	require.False(t, closed(ch))
	require.Equal(t, []int32{0, 2}, m.OwnedSlots())

	// A lost session drops everything.
	m.onLost(ctx, nil, map[string][]int32{m.owners: {0, 2}})
	groupHooks{m}.OnGroupManageError(kerr.UnknownMemberID)
	require.True(t, closed(ch))
	require.Empty(t, m.OwnedSlots())
	require.ErrorContains(t, m.Ready(), "lost its session in group flightd._flightd_owners")
	require.ErrorIs(t, m.Ready(), kerr.UnknownMemberID)

	// Back, then fenced by a second process with the same id.
	m.onAssigned(ctx, nil, map[string][]int32{m.owners: {4}})
	require.True(t, m.Owns(tab(4)))
	m.onLost(ctx, nil, map[string][]int32{m.owners: {4}})
	groupHooks{m}.OnGroupManageError(kerr.FencedInstanceID)
	require.ErrorIs(t, m.Ready(), ErrFenced)
	require.ErrorIs(t, m.Ready(), ErrNotMember)
	m.onAssigned(ctx, nil, map[string][]int32{m.owners: {4}})
	require.False(t, m.Owns(tab(4)), "a fenced member never owns again")
	at, err := m.publish(ctx)
	require.NoError(t, err)
	require.Zero(t, at, "a fenced member publishes nothing")
}

func TestHookCountsAnsweredGroupRequests(t *testing.T) {
	m, clock := fakeMember(t, "n1")
	t0 := clock.now()
	h := groupHooks{m}
	h.OnBrokerE2E(kgo.BrokerMetadata{}, 1, kgo.BrokerE2E{}) // a fetch: not the coordinator's word
	require.True(t, m.lastContact.IsZero())
	h.OnBrokerE2E(kgo.BrokerMetadata{}, 12, kgo.BrokerE2E{ReadErr: context.DeadlineExceeded})
	require.True(t, m.lastContact.IsZero(), "an unanswered heartbeat")
	h.OnBrokerE2E(kgo.BrokerMetadata{}, 12, kgo.BrokerE2E{TimeToWrite: time.Millisecond, ReadWait: 2 * time.Second, TimeToRead: time.Millisecond})
	require.Equal(t, t0.Add(-2002*time.Millisecond), m.lastContact, "counted from when the request was sent")
	clock.set(t0.Add(time.Second))
	h.OnBrokerE2E(kgo.BrokerMetadata{}, 14, kgo.BrokerE2E{})
	require.Equal(t, t0.Add(time.Second), m.lastContact, "a SyncGroup answered")
}

func rec(t *testing.T, m *Member, off int64, r record, tombstone bool) {
	var val []byte
	if !tombstone {
		var err error
		val, err = json.Marshal(r)
		require.NoError(t, err)
	}
	m.mu.Lock()
	m.applyLocked(&kgo.Record{Topic: m.nodesT, Partition: 0, Offset: off, Key: []byte(r.ID), Value: val})
	m.mu.Unlock()
}

func TestOwnerAndNodesFromTheRecords(t *testing.T) {
	m, clock := fakeMember(t, "b")
	t0 := clock.now()
	tab := func(s int32) string { return tableIn(s, 8) }
	rec(t, m, 0, record{ID: "a", Address: "grpc://a", Started: t0.Add(-time.Hour), Heartbeat: t0.Add(-time.Second), Slots: []int32{3, 0, 1}}, false)
	rec(t, m, 1, record{ID: "c", Address: "grpc://c", Started: t0, Heartbeat: t0, Slots: []int32{1}}, false)
	rec(t, m, 2, record{ID: "old", Heartbeat: t0.Add(-30 * time.Second), Slots: []int32{5}}, false)
	rec(t, m, 3, record{ID: "b", Heartbeat: t0, Slots: []int32{6}}, false) // our own, as read back
	m.mu.Lock()
	m.applyLocked(&kgo.Record{Topic: m.nodesT, Offset: 4, Key: []byte("x"), Value: []byte("{not json")})
	require.EqualValues(t, 5, m.readTo)
	m.mu.Unlock()

	for _, c := range []struct {
		slot  int32
		owner string
	}{{0, "a"}, {3, "a"}, {1, "c"}} {
		got, ok := m.Owner(tab(c.slot))
		require.True(t, ok, "slot %d", c.slot)
		require.Equal(t, c.owner, got, "slot %d: the latest heartbeat wins", c.slot)
	}
	_, ok := m.Owner(tab(5))
	require.False(t, ok, "a record three session timeouts old is not believed")
	_, ok = m.Owner(tab(6))
	require.False(t, ok, "this node answers for itself from its state, not its record")
	m.contact(t0)
	m.onAssigned(context.Background(), nil, map[string][]int32{m.owners: {1, 6}})
	for _, s := range []int32{1, 6} {
		got, _ := m.Owner(tab(s))
		require.Equal(t, "b", got, "slot %d: Owns says this node", s)
	}

	nodes := m.Nodes()
	require.Equal(t, []Node{
		{ID: "a", Address: "grpc://a", Started: t0.Add(-time.Hour), LastHeartbeat: t0.Add(-time.Second), Slots: []int32{0, 1, 3}},
		{ID: "b", Address: "grpc://b", Started: t0, Slots: []int32{1, 6}},
		{ID: "c", Address: "grpc://c", Started: t0, LastHeartbeat: t0, Slots: []int32{1}},
	}, nodes)

	rec(t, m, 6, record{ID: "c"}, true)
	_, ok = m.Owner(tab(0))
	require.True(t, ok)
	require.Len(t, m.Nodes(), 2, "a tombstone removes the node")
	clock.set(t0.Add(30*time.Second - time.Second))
	require.Len(t, m.Nodes(), 1, "a record three session timeouts old is gone")
}

func TestJoinWithoutBrokers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := Join(ctx, Options{Brokers: []string{"127.0.0.1:1"}, NodeID: "n1"})
	require.ErrorContains(t, err, "cluster: create topic flightd._flightd_owners: the Kafka brokers 127.0.0.1:1 did not answer")
}

// TestPinnedElsewhereFromTheRecords: the oldest snapshot of a table that a
// read on another live node uses, from the nodes' records; this node's own
// record and stale ones do not count.
func TestPinnedElsewhereFromTheRecords(t *testing.T) {
	m, clock := fakeMember(t, "b")
	t0 := clock.now()
	rec(t, m, 0, record{ID: "a", Heartbeat: t0, Pins: map[string]int64{"t1": 7, "t2": 3}}, false)
	rec(t, m, 1, record{ID: "c", Heartbeat: t0, Pins: map[string]int64{"t1": 5}}, false)
	rec(t, m, 2, record{ID: "b", Heartbeat: t0, Pins: map[string]int64{"t1": 1}}, false) // our own
	rec(t, m, 3, record{ID: "old", Heartbeat: t0.Add(-30 * time.Second), Pins: map[string]int64{"t2": 1}}, false)
	require.EqualValues(t, 5, m.PinnedElsewhere("t1"))
	require.EqualValues(t, 3, m.PinnedElsewhere("t2"))
	require.Zero(t, m.PinnedElsewhere("t3"))
	rec(t, m, 4, record{ID: "c", Heartbeat: t0}, false)
	require.EqualValues(t, 7, m.PinnedElsewhere("t1"), "c's read ended")
}
