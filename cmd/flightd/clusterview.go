package main

import (
	"time"

	"github.com/flightd/flightd/lakestream"
)

// processStarted is when the process started: sys.nodes' started of a node that
// runs alone.
var processStarted = time.Now()

// clusterView is what sys.nodes, sys.tiering's owner and the cluster
// metrics show of the node's cluster: member's, or, when member is nil
// (no --node-id), the node alone, node id "", at its client address made
// from --listen.
func clusterView(cfg *Config, member *clusterNode) lakestream.Cluster {
	if member == nil {
		return lakestream.Alone(cfg.advertise(cfg), processStarted)
	}
	return memberView{member, cfg.advertise(cfg)}
}

// memberView adapts a cluster member to lakestream.Cluster (lakestream
// does not import package cluster).
type memberView struct {
	m    *clusterNode
	addr string // this node's advertised address
}

func (v memberView) Self() string                        { return v.m.ID() }
func (v memberView) Owner(tableID string) (string, bool) { return v.m.Owner(tableID) }
func (v memberView) Ready() error                        { return v.m.Ready() }

func (v memberView) Nodes() []lakestream.NodeInfo {
	ns := v.m.Nodes()
	if len(ns) == 0 {
		// Not joined yet: this node alone (its row says why it is not
		// ready).
		return []lakestream.NodeInfo{{ID: v.m.ID(), Address: v.addr, Started: processStarted}}
	}
	out := make([]lakestream.NodeInfo, len(ns))
	for i, n := range ns {
		out[i] = lakestream.NodeInfo{ID: n.ID, Address: n.Address, Started: n.Started, LastHeartbeat: n.LastHeartbeat}
	}
	return out
}
