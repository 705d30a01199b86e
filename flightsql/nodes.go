package flightsql

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
)

// Reads across nodes. In a cluster (Options.Nodes) any node serves any
// ticket: a query's ticket carries its SQL, its database and its part, and
// a part names the cut it reads (a lake snapshot and log offsets, which
// every node reads alike). So a result of several endpoints names a node in
// each endpoint's locations, spread over the live nodes, and clients fetch
// the parts from several nodes at once.

// Node is a node of the cluster, as Options.Nodes reports it.
type Node struct {
	// URI is the node's Flight address for clients, grpc://host:port or
	// grpc+tls://host:port (what it advertises).
	URI string
	// Self marks the node this server is.
	Self bool
	// Heartbeat is when the node last said it was alive, by its clock; a
	// node whose heartbeat is older than Options.NodeFresh is not named.
	// Not read for Self.
	Heartbeat time.Time
}

// DefaultNodeFresh is how recent a node's heartbeat must be for it to be
// named in a location: three heartbeats of package cluster (one a second).
// A node that died stops being named within it; until then a client that
// cannot reach it falls back to the connection it has (LocationReuseConnection).
const DefaultNodeFresh = 3 * time.Second

// locations are the locations of each of the parts endpoints of one
// result, or nil when the server is not in a cluster or the result has one
// endpoint (which the client then fetches where it asked, as a single
// server's are). The live nodes, this one first, take the endpoints round
// robin, each query starting at the next node. An endpoint of another node
// names it, then LocationReuseConnection, then this node; one of this node
// names LocationReuseConnection, then this node. A client that cannot reach
// the node named first so falls back to the node that planned the query,
// which just answered it: the ADBC drivers try every location in order and
// the connection they have last, the JDBC driver tries them in order and
// takes its own connection at LocationReuseConnection; a client that knows
// no LocationReuseConnection goes on to this node's address.
func (s *Server) locations(parts int) [][]*flight.Location {
	if s.opts.Nodes == nil || parts < 2 {
		return nil
	}
	self, peers := s.liveNodes()
	nodes := append([]string{self}, peers...)
	start := int(s.rr.Add(1)-1) % len(nodes)
	out := make([][]*flight.Location, parts)
	for i := range out {
		if u := nodes[(start+i)%len(nodes)]; u != self {
			out[i] = locs(u, flight.LocationReuseConnection, self)
		} else {
			out[i] = locs(flight.LocationReuseConnection, self)
		}
	}
	return out
}

// liveNodes is this node's URI ("" when Nodes names none) and those of the
// other nodes whose heartbeat is within NodeFresh, each once, in the order
// Nodes gives them.
func (s *Server) liveNodes() (self string, peers []string) {
	now := s.opts.Now()
	nodes := s.opts.Nodes()
	for _, n := range nodes {
		if n.Self && n.URI != "" {
			self = n.URI
		}
	}
	seen := map[string]bool{self: true, "": true}
	for _, n := range nodes {
		if n.Self || seen[n.URI] || now.Sub(n.Heartbeat) >= s.opts.NodeFresh {
			continue
		}
		seen[n.URI] = true
		peers = append(peers, n.URI)
	}
	return self, peers
}

// locs are the locations of uris, leaving out empty ones.
func locs(uris ...string) []*flight.Location {
	out := make([]*flight.Location, 0, len(uris))
	for _, u := range uris {
		if u != "" {
			out = append(out, &flight.Location{Uri: u})
		}
	}
	return out
}
