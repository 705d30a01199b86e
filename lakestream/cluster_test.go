package lakestream_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/lakestream"
)

// fakeCluster is a Cluster of fixed nodes whose tables are owned as owners
// says (by table id).
type fakeCluster struct {
	self  string
	nodes []lakestream.NodeInfo
	mu    sync.Mutex
	owner map[string]string
	ready error
}

func (f *fakeCluster) Self() string                 { return f.self }
func (f *fakeCluster) Nodes() []lakestream.NodeInfo { return f.nodes }
func (f *fakeCluster) Ready() error                 { return f.ready }
func (f *fakeCluster) setOwner(tableID, node string) {
	f.mu.Lock()
	f.owner[tableID] = node
	f.mu.Unlock()
}
func (f *fakeCluster) Owner(id string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.owner[id]
	return n, ok
}

// rowsOf reads a reader into rows of strings, a value as Arrow prints it.
func rowsOf(t *testing.T, r array.RecordReader) (cols []string, rows [][]string) {
	t.Helper()
	defer r.Release()
	for _, f := range r.Schema().Fields() {
		cols = append(cols, f.Name)
	}
	for r.Next() {
		rec := r.RecordBatch()
		for i := range int(rec.NumRows()) {
			var row []string
			for _, c := range rec.Columns() {
				if c.IsNull(i) {
					row = append(row, "NULL")
				} else {
					row = append(row, c.ValueStr(i))
				}
			}
			rows = append(rows, row)
		}
	}
	require.NoError(t, r.Err())
	return cols, rows
}

func column(t *testing.T, cols []string, rows [][]string, name string) []string {
	t.Helper()
	at := -1
	for i, c := range cols {
		if c == name {
			at = i
		}
	}
	require.GreaterOrEqual(t, at, 0, "no column %s in %v", name, cols)
	var out []string
	for _, r := range rows {
		out = append(out, r[at])
	}
	return out
}

// TestClusterStatusAndNodes: sys.tiering's owner is the node Cluster.Owner
// names (NULL alone or unknown; the last column), and sys.nodes counts
// each node's tables by it; the answering node's row says whether it is
// ready.
func TestClusterStatusAndNodes(t *testing.T) {
	e := openEnv(t, t.TempDir(), 0)
	ctx := t.Context()
	createTable(t, e, "a", 2)
	createTable(t, e, "b", 0)
	bigint, err := paimontype.ParseType("BIGINT")
	require.NoError(t, err)
	require.NoError(t, e.ls.CreateTable(ctx, "db", "c", paimontype.Schema{Columns: []paimontype.Column{{Name: "id", Type: bigint}},
		Options: map[string]string{lakestream.OptionEnabled: "false"}}, false), "c: not a lake-stream table")
	id := func(name string) string {
		tb, err := e.ls.Table(ctx, "db", name)
		require.NoError(t, err)
		return lakestream.TableID(tb)
	}

	require.Equal(t, "owner", lakestream.StatusSchema.Field(lakestream.StatusSchema.NumFields()-1).Name, "owner is sys.tiering's last column")
	r, err := e.ls.Status(ctx)
	require.NoError(t, err)
	cols, rows := rowsOf(t, r)
	require.Equal(t, []string{"NULL", "NULL", "NULL"}, column(t, cols, rows, "owner"), "alone: no owner")
	require.Equal(t, []string{"a", "a", "b"}, column(t, cols, rows, "table"))

	started := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	r, err = e.ls.Nodes(ctx, lakestream.Alone("grpc://h:1", started))
	require.NoError(t, err)
	cols, rows = rowsOf(t, r)
	require.Equal(t, []string{"node_id", "address", "started", "last_heartbeat", "tables_owned", "is_self", "ready", "last_error"}, cols)
	require.Equal(t, [][]string{{"", "grpc://h:1", "2024-05-01T12:00:00Z", "NULL", "2", "true", "true", "NULL"}}, rows)

	hb := started.Add(time.Minute)
	c := &fakeCluster{self: "n2", owner: map[string]string{id("a"): "n1"}, nodes: []lakestream.NodeInfo{
		{ID: "n1", Address: "grpc://h:1", Started: started, LastHeartbeat: hb},
		{ID: "n2", Address: "grpc://h:2", Started: started},
		{ID: "n3", Address: "grpc://h:3", Started: started, LastHeartbeat: hb},
	}}
	r, err = e.ls.StatusIn(ctx, c)
	require.NoError(t, err)
	cols, rows = rowsOf(t, r)
	require.Equal(t, []string{"n1", "n1", "NULL"}, column(t, cols, rows, "owner"), "b: owned by none known")

	c.setOwner(id("b"), "n2")
	r, err = e.ls.Nodes(ctx, c)
	require.NoError(t, err)
	_, rows = rowsOf(t, r)
	require.Equal(t, [][]string{
		{"n1", "grpc://h:1", "2024-05-01T12:00:00Z", "2024-05-01T12:01:00Z", "1", "false", "NULL", "NULL"},
		{"n2", "grpc://h:2", "2024-05-01T12:00:00Z", "NULL", "1", "true", "true", "NULL"},
		{"n3", "grpc://h:3", "2024-05-01T12:00:00Z", "2024-05-01T12:01:00Z", "0", "false", "NULL", "NULL"},
	}, rows)
	owned, err := e.ls.TablesOwned(ctx, c)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"n1": 1, "n2": 1}, owned)

	c.ready = errors.New("not a member: joining")
	r, err = e.ls.Nodes(ctx, c)
	require.NoError(t, err)
	cols, rows = rowsOf(t, r)
	require.Equal(t, []string{"NULL", "false", "NULL"}, column(t, cols, rows, "ready"))
	require.Equal(t, []string{"NULL", "not a member: joining", "NULL"}, column(t, cols, rows, "last_error"))

	require.True(t, arrow.TypeEqual(lakestream.NodesSchema.Field(2).Type, &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}))
}

// TestClusterStatusConcurrent reads sys.tiering and sys.nodes while the
// owners change and tables come and go (run with -race).
func TestClusterStatusConcurrent(t *testing.T) {
	e := openEnv(t, t.TempDir(), 0)
	ctx := t.Context()
	createTable(t, e, "t0", 2)
	c := &fakeCluster{self: "n1", owner: map[string]string{}, nodes: []lakestream.NodeInfo{{ID: "n1"}, {ID: "n2"}}}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 2)
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				// A table dropped between the listing and its snapshot may
				// fail sys.tiering (as it did before owner); sys.nodes only
				// loads tables.
				if r, err := e.ls.StatusIn(ctx, c); err == nil {
					r.Release()
				}
				r, err := e.ls.Nodes(ctx, c)
				if err != nil {
					errs <- err
					return
				}
				n := 0
				for r.Next() {
					n += int(r.RecordBatch().NumRows())
				}
				r.Release()
				if n != 2 {
					errs <- fmt.Errorf("sys.nodes has %d rows, want 2", n)
					return
				}
			}
		})
	}
	for i := range 10 {
		name := fmt.Sprintf("t%d", i+1)
		createTable(t, e, name, 1)
		tb, err := e.ls.Table(ctx, "db", name)
		require.NoError(t, err)
		c.setOwner(lakestream.TableID(tb), []string{"n1", "n2"}[i%2])
		require.NoError(t, e.ls.DropTable(ctx, "db", fmt.Sprintf("t%d", i), false))
	}
	close(stop)
	wg.Wait()
	for range 2 {
		require.NoError(t, <-errs)
	}
	owned, err := e.ls.TablesOwned(ctx, c)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"n2": 1}, owned, "t10 is left, owned by n2")
}
