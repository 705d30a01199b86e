package cluster

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/flightd/flightd/internal/testkafka"
)

// tlog sends a member's messages to the test log while the test runs.
func tlog(t *testing.T) func(string, ...any) {
	var mu sync.Mutex
	done := false
	t.Cleanup(func() { mu.Lock(); done = true; mu.Unlock() })
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Logf(format, args...)
		}
	}
}

func join(t *testing.T, addr, prefix, id string, session time.Duration) *Member {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := Join(ctx, Options{
		Brokers: []string{addr}, Prefix: prefix, NodeID: id, Advertise: "grpc://" + id + ":31337",
		SessionTimeout: session, Logf: tlog(t),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// crash ends the member as a killed process would end: its clients close,
// with no LeaveGroup (franz-go sends none for a static member) and no
// tombstone.
func (m *Member) crash() { m.closeOnce.Do(func() { m.closeErr = m.teardown(false) }) }

// waitUntil waits, within bound, until cond holds, and returns how long it
// took.
func waitUntil(t *testing.T, bound time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := time.After(bound)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("not within %s: %s", bound, what)
		case <-tick.C:
		}
	}
	return time.Since(start)
}

// partitioned reports whether the members' owned slots split all slots
// between them evenly (within one), as the balancer leaves them once a
// rebalance is over: a cooperative rebalance passes through states that
// split them unevenly.
func partitioned(ms ...*Member) bool {
	var all []int32
	least, most := 1<<30, 0
	for _, m := range ms {
		own := m.OwnedSlots()
		least, most = min(least, len(own)), max(most, len(own))
		all = append(all, own...)
	}
	if most-least > 1 {
		return false
	}
	slices.Sort(all)
	n := ms[0].Slots()
	if int32(len(all)) != n {
		return false
	}
	for i, s := range all {
		if s != int32(i) {
			return false
		}
	}
	return true
}

func tables(m *Member) []string {
	out := make([]string, m.Slots())
	for s := range out {
		out[s] = tableIn(int32(s), m.Slots())
	}
	return out
}

// TestCluster runs the cases that share one broker, each under its own
// prefix (so its own topics and group).
func TestCluster(t *testing.T) {
	br := testkafka.Start(t)
	addr := br.Addr()

	t.Run("OneNodeOwnsEverySlot", func(t *testing.T) {
		m := join(t, addr, "one.", "solo", 10*time.Second)
		require.NoError(t, m.Ready())
		require.EqualValues(t, 64, m.Slots())
		waitUntil(t, time.Minute, "the node owns all 64 slots", func() bool { return partitioned(m) })
		for _, tab := range tables(m) {
			require.True(t, m.Owns(tab), tab)
			owner, ok := m.Owner(tab)
			require.True(t, ok)
			require.Equal(t, "solo", owner)
		}
		nodes := m.Nodes()
		require.Len(t, nodes, 1)
		require.Equal(t, "solo", nodes[0].ID)
		require.Equal(t, "grpc://solo:31337", nodes[0].Address)
		require.Len(t, nodes[0].Slots, 64)

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rcs, err := m.admin.DescribeTopicConfigs(ctx, m.nodesT)
		require.NoError(t, err)
		rc, err := rcs.On(m.nodesT, nil)
		require.NoError(t, err)
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" {
				require.Equal(t, "compact", c.MaybeValue())
			}
		}
		require.NoError(t, m.Close())
		require.ErrorIs(t, m.Ready(), ErrClosed)
		require.False(t, m.Owns("t"))
	})

	t.Run("ThreeNodesShareTheSlotsAndOneLeaves", func(t *testing.T) {
		// A long session timeout: slots that move within a fraction
		// of it moved because the node left, not because it expired.
		const session = 45 * time.Second
		a := join(t, addr, "three.", "a", session)
		b := join(t, addr, "three.", "b", session)
		c := join(t, addr, "three.", "c", session)
		ms := []*Member{a, b, c}
		waitUntil(t, 2*time.Minute, "a, b and c split the slots evenly", func() bool { return partitioned(a, b, c) })
		owner := map[string]string{}
		for _, tab := range tables(a) {
			var by []string
			for _, m := range ms {
				if m.Owns(tab) {
					by = append(by, m.ID())
				}
			}
			require.Len(t, by, 1, "table %s (slot %d) is owned by exactly one node", tab, a.Slot(tab))
			owner[tab] = by[0]
		}
		waitUntil(t, time.Minute, "every node names the same owner of every table", func() bool {
			for _, m := range ms {
				for tab, want := range owner {
					if got, _ := m.Owner(tab); got != want {
						return false
					}
				}
			}
			return true
		})
		for _, m := range ms {
			nodes := m.Nodes()
			require.Len(t, nodes, 3, "on %s", m.ID())
			for i, n := range nodes {
				require.Equal(t, ms[i].ID(), n.ID)
				require.Equal(t, "grpc://"+n.ID+":31337", n.Address)
				require.Equal(t, ms[i].OwnedSlots(), n.Slots, "%s as %s sees it", n.ID, m.ID())
			}
		}

		cSlots := c.OwnedSlots()
		require.NoError(t, c.Close())
		took := waitUntil(t, session, "a and b take c's slots", func() bool { return partitioned(a, b) })
		t.Logf("c's %d slots moved %s after Close (session timeout %s)", len(cSlots), took, session)
		require.Less(t, took, session/2, "Close leaves the group: the slots move long before the session timeout")
		waitUntil(t, time.Minute, "c's tombstone reaches a and b", func() bool {
			return len(a.Nodes()) == 2 && len(b.Nodes()) == 2
		})
		for _, s := range cSlots {
			tab := tableIn(s, a.Slots())
			require.True(t, a.Owns(tab) != b.Owns(tab), "slot %d", s)
		}
	})

	t.Run("KilledNodeSlotsMoveAfterTheSessionTimeout", func(t *testing.T) {
		const session = 6 * time.Second // the brokers' group.min.session.timeout.ms
		a := join(t, addr, "kill.", "a", session)
		b := join(t, addr, "kill.", "b", session)
		waitUntil(t, 2*time.Minute, "a and b split the slots evenly", func() bool { return partitioned(a, b) })
		start := time.Now()
		b.crash()
		waitUntil(t, 2*time.Minute, "a takes b's slots", func() bool { return partitioned(a) })
		took := time.Since(start)
		t.Logf("b's slots moved %s after it was killed (session timeout %s)", took, session)
		// The coordinator expires b a session timeout after the last
		// heartbeat it got, at most a heartbeat interval (1 s) before
		// the kill.
		require.Greater(t, took, session/2, "a kill does not leave the group: the slots wait for the session to expire")
	})

	t.Run("DuplicateNodeIDFencesTheFirst", func(t *testing.T) {
		first := join(t, addr, "dup.", "n", 10*time.Second)
		waitUntil(t, time.Minute, "first owns all slots", func() bool { return partitioned(first) })
		second := join(t, addr, "dup.", "n", 10*time.Second)
		waitUntil(t, time.Minute, "the first is fenced", func() bool { return first.Ready() != nil })
		require.ErrorIs(t, first.Ready(), ErrFenced)
		require.ErrorContains(t, first.Ready(), "another process joined it with the same node id")
		require.Empty(t, first.OwnedSlots())
		waitUntil(t, time.Minute, "second owns all slots", func() bool { return partitioned(second) })

		// The fenced one's Close must not remove the newer process
		// from the group (it has the same instance id).
		require.NoError(t, first.Close())
		adm := kadm.NewClient(second.data)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		gs, err := adm.DescribeGroups(ctx, second.owners)
		require.NoError(t, err)
		g := gs[second.owners]
		require.NoError(t, g.Err)
		memberID, _ := second.group.GroupMetadata()
		require.Len(t, g.Members, 1)
		require.Equal(t, memberID, g.Members[0].MemberID)
		require.NoError(t, second.Ready())
	})
}

// brokerPID finds the process of the broker's JVM (Linux: its command line
// names the broker's server.properties).
func brokerPID(t *testing.T, br *testkafka.Broker) int {
	conf := filepath.Join(filepath.Dir(br.LogPath()), "server.properties")
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if slices.Contains(strings.Split(string(cmd), "\x00"), conf) {
			return pid
		}
	}
	t.Skip("the broker's process is not found in /proc")
	return 0
}

// TestBrokerOutage: a node cut off from Kafka stops owning anything once a
// session timeout has passed, and owns slots again when the broker is back.
// First the broker is frozen (SIGSTOP): the connections stay open and
// unanswered, franz-go reports nothing for a while, and the time rule alone
// turns the node not ready. Then it is stopped, and restarted.
func TestBrokerOutage(t *testing.T) {
	br := testkafka.Start(t)
	const session = 6 * time.Second
	m := join(t, br.Addr(), "outage.", "solo", session)
	waitUntil(t, time.Minute, "the node owns all slots", func() bool { return partitioned(m) })

	pid := brokerPID(t, br)
	cont := func() { _ = syscall.Kill(pid, syscall.SIGCONT) }
	t.Cleanup(cont)
	changed := m.Changed()
	require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP))
	waitUntil(t, time.Minute, "the node turns not ready with the broker frozen", func() bool { return m.Ready() != nil })
	err := m.Ready()
	t.Logf("Ready with the broker frozen: %v", err)
	require.ErrorIs(t, err, ErrNotMember)
	require.ErrorContains(t, err, `node "solo" is cut off from the Kafka brokers `+br.Addr())
	require.Empty(t, m.OwnedSlots())
	select {
	case <-changed:
	case <-time.After(time.Minute):
		t.Fatal("Changed was not closed when the node stopped owning its slots")
	}
	cont()
	waitUntil(t, 3*time.Minute, "the node owns all slots again once the broker runs", func() bool { return m.Ready() == nil && partitioned(m) })
	changed = m.Changed()

	br.Stop()
	waitUntil(t, 2*time.Minute, "the node turns not ready with the broker stopped", func() bool { return m.Ready() != nil })
	err = m.Ready()
	t.Logf("Ready with the broker stopped: %v", err)
	require.ErrorIs(t, err, ErrNotMember)
	require.ErrorContains(t, err, br.Addr())
	require.Empty(t, m.OwnedSlots())
	for _, tab := range tables(m) {
		require.False(t, m.Owns(tab), tab)
	}
	select {
	case <-changed:
	case <-time.After(time.Minute):
		t.Fatal("Changed was not closed when the node stopped owning its slots")
	}

	br.Restart(t)
	waitUntil(t, 3*time.Minute, "the node rejoins and owns all slots", func() bool { return m.Ready() == nil && partitioned(m) })
	for _, tab := range tables(m) {
		require.True(t, m.Owns(tab), tab)
	}
}
