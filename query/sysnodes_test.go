//go:build duckdb_arrow

package query

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/query/plan"
)

// stubCluster is a lakestream.Cluster of fixed nodes; owner maps table ids
// to the node that owns them.
type stubCluster struct {
	self  string
	nodes []lakestream.NodeInfo
	mu    sync.Mutex
	owner map[string]string
	ready error
}

func (c *stubCluster) Self() string                 { return c.self }
func (c *stubCluster) Nodes() []lakestream.NodeInfo { return c.nodes }
func (c *stubCluster) Ready() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready
}

func (c *stubCluster) Owner(id string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.owner[id]
	return n, ok
}

func (c *stubCluster) set(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f()
}

// TestSysNodesAlone: a node that runs alone lists itself, an empty node_id, with
// every lake-stream table; sys.tiering's owner is NULL, its last column.
func TestSysNodesAlone(t *testing.T) {
	started := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	e := newTestEngineWith(t, Options{Threads: 2, Cluster: lakestream.Alone("grpc://host:31337", started)})
	run(t, e, "CREATE TABLE kv (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, e, "CREATE TABLE ev (id BIGINT)")
	run(t, e, "CREATE TABLE lakeonly (id BIGINT) WITH ('lakestream.enabled' = 'false')")

	require.Equal(t, []string{"node_id", "address", "started", "last_heartbeat", "tables_owned", "is_self", "ready", "last_error"},
		columnNames(t, e, "SELECT * FROM sys.nodes"))
	require.Equal(t, [][]string{{"", "grpc://host:31337", "2024-05-01 12:00:00", "true", "2", "true", "true", "true"}},
		run(t, e, `SELECT node_id, address, strftime(started AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M:%S'), last_heartbeat IS NULL, tables_owned, is_self, ready, last_error IS NULL FROM sys.nodes`))
	require.Equal(t, [][]string{{"TIMESTAMP WITH TIME ZONE", "TIMESTAMP WITH TIME ZONE", "BIGINT", "BOOLEAN"}},
		run(t, e, `SELECT typeof(started), typeof(last_heartbeat), typeof(tables_owned), typeof(is_self) FROM "SYS"."NODES"`), "any case, as DuckDB names")

	cols := columnNames(t, e, "SELECT * FROM sys.tiering")
	require.Equal(t, "owner", cols[len(cols)-1], "owner is sys.tiering's last column")
	require.Equal(t, []string{"database", "table", "bucket", "log_start", "lake_offset", "log_end", "lag_rows", "snapshot_id", "snapshot_time",
		"lag_seconds", "failed_rounds", "last_error", "retry_at", "owner"}, cols)
	require.Equal(t, [][]string{{"3", "0"}}, run(t, e, `SELECT count(*), count(owner) FROM sys.tiering`), "alone: no owner")

	// Read-only, short work.
	_, err := e.Execute(context.Background(), plan.Analyze(`INSERT INTO sys.nodes VALUES ('x')`))
	require.ErrorIs(t, err, engine.ErrInvalid)
	require.ErrorContains(t, err, "read-only system tables")
	require.True(t, e.ShortWork(context.Background(), plan.Analyze("SELECT * FROM sys.nodes")))
}

// TestSysNodesDefault: an engine given no Cluster runs alone with no address.
func TestSysNodesDefault(t *testing.T) {
	e := newTestEngine(t)
	require.Equal(t, [][]string{{"", "true", "0", "true", "true"}},
		run(t, e, `SELECT node_id, address IS NULL, tables_owned, is_self, ready FROM sys.nodes`))
}

// TestSysNodesCluster: with a cluster, sys.tiering names each table's
// owner and sys.nodes counts the tables each node owns: the same as
// grouping sys.tiering by owner. The answering node's row says whether it
// is ready, and why not.
func TestSysNodesCluster(t *testing.T) {
	started := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	c := &stubCluster{self: "n2", owner: map[string]string{}, nodes: []lakestream.NodeInfo{
		{ID: "n1", Address: "grpc://a:1", Started: started, LastHeartbeat: started.Add(time.Minute)},
		{ID: "n2", Address: "grpc://b:1", Started: started, LastHeartbeat: started.Add(time.Minute)},
		{ID: "n3", Address: "grpc://c:1", Started: started, LastHeartbeat: started.Add(time.Minute)},
	}}
	e := newTestEngineWith(t, Options{Threads: 2, Cluster: c})
	id := map[string]string{}
	for _, name := range []string{"a", "b", "c", "d"} {
		run(t, e, "CREATE TABLE "+name+" (id BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
		id[name] = tableIDOf(t, e, name)
	}
	require.Equal(t, [][]string{{"8", "0"}}, run(t, e, `SELECT count(*), count(owner) FROM sys.tiering`), "no owner known yet")
	require.Equal(t, [][]string{{"n1", "0"}, {"n2", "0"}, {"n3", "0"}}, run(t, e, `SELECT node_id, tables_owned FROM sys.nodes ORDER BY 1`))

	c.set(func() {
		c.owner[id["a"]] = "n1"
		c.owner[id["b"]] = "n1"
		c.owner[id["c"]] = "n2"
	})
	require.Equal(t, [][]string{{"a", "n1"}, {"a", "n1"}, {"b", "n1"}, {"b", "n1"}, {"c", "n2"}, {"c", "n2"}, {"d", "NULL"}, {"d", "NULL"}},
		run(t, e, `SELECT "table", coalesce(owner, 'NULL') FROM sys.tiering ORDER BY 1, 2`), "the owner on every bucket row")
	require.Equal(t, [][]string{
		{"n1", "grpc://a:1", "2", "false", "NULL", "NULL"},
		{"n2", "grpc://b:1", "1", "true", "true", "NULL"},
		{"n3", "grpc://c:1", "0", "false", "NULL", "NULL"},
	}, run(t, e, `SELECT node_id, address, tables_owned, is_self, coalesce(ready::VARCHAR, 'NULL'), coalesce(last_error, 'NULL') FROM sys.nodes ORDER BY 1`))
	require.Equal(t, [][]string{{"n1", "2", "2"}, {"n2", "1", "1"}, {"n3", "0", "0"}},
		run(t, e, `SELECT n.node_id, n.tables_owned, count(DISTINCT t."table") FROM sys.nodes n LEFT JOIN sys.tiering t ON t.owner = n.node_id GROUP BY ALL ORDER BY 1`),
		"tables_owned is sys.tiering grouped by owner")
	require.Equal(t, [][]string{{"2024-05-01 12:01:00"}}, run(t, e, `SELECT strftime(last_heartbeat AT TIME ZONE 'UTC', '%Y-%m-%d %H:%M:%S') FROM sys.nodes WHERE is_self`))

	c.set(func() {
		c.ready = errors.New("cluster: this node is not a member of the cluster: node \"n2\" is joining")
		c.owner[id["c"]] = "n3" // a handover
	})
	require.Equal(t, [][]string{{"n2", "0", "false", "cluster: this node is not a member of the cluster: node \"n2\" is joining"}},
		run(t, e, `SELECT node_id, tables_owned, ready, last_error FROM sys.nodes WHERE is_self`))
	require.Equal(t, [][]string{{"c", "n3"}}, run(t, e, `SELECT DISTINCT "table", owner FROM sys.tiering WHERE "table" = 'c'`))
}
