package flightsql

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/require"
)

// cluster is a settable Options.Nodes.
type cluster struct {
	mu    sync.Mutex
	nodes []Node
}

func (c *cluster) Nodes() []Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Node(nil), c.nodes...)
}

func uris(ls []*flight.Location) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.GetUri())
	}
	return out
}

// TestEndpointsNameTheLiveNodesRoundRobin: in a cluster, each endpoint of
// a result of several names a node: this one (the connection the client
// has, then its address) or another whose heartbeat is recent (it, then
// the connection the client has, then this node), spread over the nodes,
// each query starting at the next node. Stale nodes and a second node at
// the same address are never named; results of one endpoint and servers
// outside a cluster name none.
func TestEndpointsNameTheLiveNodesRoundRobin(t *testing.T) {
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	now := clk.Now()
	cl := &cluster{nodes: []Node{
		{URI: "grpc://b:1", Heartbeat: now.Add(-time.Second)},
		{URI: "grpc://a:1", Self: true, Heartbeat: now.Add(-time.Hour)}, // this node: never stale
		{URI: "grpc://c:1", Heartbeat: now.Add(time.Second)},            // a clock ahead
		{URI: "grpc://d:1", Heartbeat: now.Add(-DefaultNodeFresh)},      // stale
		{URI: "grpc://b:1", Heartbeat: now},                             // b again
		{URI: "", Heartbeat: now},
	}}
	eng := &partsEngine{}
	addr := serve(t, eng, Options{MaxEndpoints: 8, Nodes: cl.Nodes, Now: clk.Now})
	c := cookieClient(t, addr)
	ctx := context.Background()
	reuse := flight.LocationReuseConnection
	want := map[string][]string{
		"grpc://a:1": {reuse, "grpc://a:1"},
		"grpc://b:1": {"grpc://b:1", reuse, "grpc://a:1"},
		"grpc://c:1": {"grpc://c:1", reuse, "grpc://a:1"},
	}
	var firsts []string
	for q := range 4 {
		info, err := c.Execute(ctx, "SELECT PARTS")
		require.NoError(t, err)
		require.Len(t, info.Endpoint, 3)
		named := map[string]bool{}
		for i, ep := range info.Endpoint {
			got := uris(ep.Location)
			require.NotEmpty(t, got, "query %d endpoint %d", q, i)
			node := got[0]
			if node == reuse {
				node = got[1]
			}
			require.Equal(t, want[node], got, "query %d endpoint %d", q, i)
			named[node] = true
		}
		require.Len(t, named, 3, "query %d: the three live nodes take an endpoint each", q)
		firsts = append(firsts, uris(info.Endpoint[0].Location)[0])
		n, _ := readAll(t, c, info)
		require.EqualValues(t, 3*len("SELECT PARTS"), n)
	}
	require.NotEqual(t, firsts[0], firsts[1], "each query starts at another node")
	require.NotEqual(t, firsts[1], firsts[2])
	require.Equal(t, firsts[0], firsts[3], "three nodes: the fourth query starts where the first did")

	info, err := c.Execute(ctx, "SELECT 1")
	require.NoError(t, err)
	require.Len(t, info.Endpoint, 1)
	require.Empty(t, info.Endpoint[0].Location, "a result of one endpoint is fetched where it was asked")

	// The peers' heartbeats age: only this node is left.
	clk.Add(DefaultNodeFresh + time.Second)
	info, err = c.Execute(ctx, "SELECT PARTS")
	require.NoError(t, err)
	for i, ep := range info.Endpoint {
		require.Equal(t, []string{reuse, "grpc://a:1"}, uris(ep.Location), "endpoint %d", i)
	}

	one := cookieClient(t, serve(t, &partsEngine{}, Options{MaxEndpoints: 1, Nodes: cl.Nodes, Now: clk.Now}))
	info, err = one.Execute(ctx, "SELECT PARTS")
	require.NoError(t, err)
	require.Len(t, info.Endpoint, 1)
	require.Empty(t, info.Endpoint[0].Location, "MaxEndpoints 1: one endpoint, no location, in a cluster too")

	alone := cookieClient(t, serve(t, &partsEngine{}, Options{MaxEndpoints: 8}))
	info, err = alone.Execute(ctx, "SELECT PARTS")
	require.NoError(t, err)
	require.Len(t, info.Endpoint, 3)
	for _, ep := range info.Endpoint {
		require.Empty(t, ep.Location, "a single server names no locations")
	}
}

// TestAnyServerServesAnyTicket: a ticket holds all its DoGet needs (the
// SQL, the session's database, the part), so a server that never saw the
// statement serves it: the tickets of a plain query, of a part, and of a
// prepared statement (whose handle the other server does not know).
func TestAnyServerServesAnyTicket(t *testing.T) {
	ctx := context.Background()
	engA, engB := &partsEngine{}, &partsEngine{}
	a := cookieClient(t, serve(t, engA, Options{MaxEndpoints: 8}))
	b := cookieClient(t, serve(t, engB, Options{MaxEndpoints: 8}))
	opts, err := flight.NewSessionOptionValues(map[string]any{"schema": "shop"})
	require.NoError(t, err)
	_, err = a.SetSessionOptions(ctx, &flight.SetSessionOptionsRequest{SessionOptions: opts})
	require.NoError(t, err)

	info, err := a.Execute(ctx, "SELECT PARTS")
	require.NoError(t, err)
	n, _ := readAll(t, b, info)
	require.EqualValues(t, 3*len("SELECT PARTS"), n)
	require.ElementsMatch(t, []string{"shop:p0", "shop:p1", "shop:p2"}, engB.parts, "B ran A's parts in A's session's database")

	ps, err := a.Prepare(ctx, "SELECT 12345")
	require.NoError(t, err)
	info, err = ps.Execute(ctx)
	require.NoError(t, err)
	require.NoError(t, ps.Close(ctx))
	n, _ = readAll(t, b, info)
	require.EqualValues(t, len("SELECT 12345"), n, "a prepared statement's ticket, closed on A, served by B")
}
