package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightd/flightd/cluster"
)

// clusterNode is this server's membership in its cluster (--node-id). When
// the brokers cannot be reached at start, the server starts anyway, serving
// the lake as a server alone does while its log recovers, and joins in the
// background: until then it owns no table (tiers nothing) and says why in
// sys.nodes and the cluster metrics.
type clusterNode struct {
	id   string
	m    atomic.Pointer[cluster.Member]
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	lastErr error // the last failed join
}

// startClusterNode joins with join, waiting for the first attempt; when it
// fails, it logs why and tries again with backoff until it succeeds or the
// node is closed.
func startClusterNode(id string, lg *slog.Logger, join func(context.Context) (*cluster.Member, error)) *clusterNode {
	n := &clusterNode{id: id, stop: make(chan struct{}), done: make(chan struct{})}
	first := make(chan struct{})
	go func() {
		defer close(n.done)
		wait := time.Second
		for attempt := 0; ; attempt++ {
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				select {
				case <-n.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			m, err := join(ctx)
			cancel()
			if err == nil {
				n.m.Store(m)
				lg.Info("joined the cluster", "node", id)
			} else {
				n.mu.Lock()
				n.lastErr = err
				n.mu.Unlock()
				lg.Warn("cannot join the cluster yet; serving the lake, tiering nothing, and trying again", "node", id, "err", err, "retry_in", wait)
			}
			if attempt == 0 {
				close(first)
			}
			if err == nil {
				return
			}
			select {
			case <-n.stop:
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 30*time.Second)
		}
	}()
	<-first
	return n
}

func (n *clusterNode) member() *cluster.Member { return n.m.Load() }

// ID is the node id.
func (n *clusterNode) ID() string { return n.id }

// Owns reports whether this node tiers the table: never before it joined.
func (n *clusterNode) Owns(tableID string) bool {
	m := n.member()
	return m != nil && m.Owns(tableID)
}

// Owner names the node that tiers the table, as far as this node knows.
func (n *clusterNode) Owner(tableID string) (string, bool) {
	if m := n.member(); m != nil {
		return m.Owner(tableID)
	}
	return "", false
}

// Nodes lists the live nodes (none before this one joined).
func (n *clusterNode) Nodes() []cluster.Node {
	if m := n.member(); m != nil {
		return m.Nodes()
	}
	return nil
}

// Ready says whether the node is a member of its cluster now, and why not.
func (n *clusterNode) Ready() error {
	if m := n.member(); m != nil {
		return m.Ready()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return fmt.Errorf("%w: not joined yet: %v", cluster.ErrNotMember, n.lastErr)
}

// Close stops joining and leaves the cluster.
func (n *clusterNode) Close() error {
	close(n.stop)
	<-n.done
	if m := n.member(); m != nil {
		return m.Close()
	}
	return nil
}

// PinnedElsewhere returns the oldest snapshot of the table a read on
// another node uses (0: none, or not joined).
func (n *clusterNode) PinnedElsewhere(tableID string) int64 {
	if m := n.member(); m != nil {
		return m.PinnedElsewhere(tableID)
	}
	return 0
}
