package lakestream

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Cluster is what the system tables show of the nodes that serve the
// warehouse: sys.nodes, and the column owner of sys.tiering. A flightd
// node that is one of several adapts its cluster membership (package
// cluster's Member) to it; lakestream does not depend on that package.
// Alone is the Cluster of a node that runs by itself. Its methods must be
// safe for concurrent use and cheap: a statement calls Owner once per
// lake-stream table.
type Cluster interface {
	// Self is this node's id; "" for a node that runs alone.
	Self() string
	// Nodes lists the live nodes, this one included.
	Nodes() []NodeInfo
	// Owner returns the node that tiers the table of that id (TableID);
	// ok is false when none is known to.
	Owner(tableID string) (nodeID string, ok bool)
	// Ready returns nil while this node is a member of the cluster (it
	// owns its tables), otherwise why it is not.
	Ready() error
}

// NodeInfo is a node as Cluster.Nodes lists it.
type NodeInfo struct {
	ID      string
	Address string // its Flight address for clients, grpc://host:port ("": unknown)
	// Started is when the node joined (or started); LastHeartbeat when it
	// last said it was alive (zero: not yet, or a node that runs alone).
	// Both are the node's own clock.
	Started, LastHeartbeat time.Time
}

// Alone returns the Cluster of a node that runs by itself: one node, id
// "", at address (its client address, from --listen), started at started.
// It is always ready; Owner knows no owner (sys.tiering's owner is NULL),
// and sys.nodes counts every lake-stream table as the node's.
func Alone(address string, started time.Time) Cluster {
	return alone{NodeInfo{Address: address, Started: started}}
}

type alone struct{ n NodeInfo }

func (a alone) Self() string                { return "" }
func (a alone) Nodes() []NodeInfo           { return []NodeInfo{a.n} }
func (a alone) Owner(string) (string, bool) { return "", false }
func (a alone) Ready() error                { return nil }

// NodesSchema is the schema of the system table sys.nodes: one row per live
// node of the cluster, by node id; on a node that runs alone, one row with
// an empty node_id.
var NodesSchema = arrow.NewSchema([]arrow.Field{
	{Name: "node_id", Type: arrow.BinaryTypes.String},
	{Name: "address", Type: arrow.BinaryTypes.String, Nullable: true}, // its Flight address for clients
	{Name: "started", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
	// When the node last published its record (NULL: not yet; a node that
	// runs alone). The node's clock, like started.
	{Name: "last_heartbeat", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
	// The lake-stream tables the node tiers: those whose owner in
	// sys.tiering is this node (every one on a node that runs alone).
	{Name: "tables_owned", Type: arrow.PrimitiveTypes.Int64},
	{Name: "is_self", Type: arrow.FixedWidthTypes.Boolean}, // the row of the node that answers
	// The answering node's own row only (NULL on the others): whether it
	// is a member of the cluster now, and if not, why (Cluster.Ready).
	{Name: "ready", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "last_error", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// Nodes returns the rows of sys.nodes as c lists the nodes; c nil is
// Alone("", time.Time{}). The caller releases the reader.
func (s *Service) Nodes(ctx context.Context, c Cluster) (array.RecordReader, error) {
	if c == nil {
		c = Alone("", time.Time{})
	}
	owned, err := s.TablesOwned(ctx, c)
	if err != nil {
		return nil, err
	}
	self := c.Self()
	b := array.NewRecordBuilder(s.mem, NodesSchema)
	defer b.Release()
	ts := func(i int, t time.Time) {
		if t.IsZero() {
			b.Field(i).AppendNull()
		} else {
			b.Field(i).(*array.TimestampBuilder).Append(arrow.Timestamp(t.UnixMilli()))
		}
	}
	for _, n := range c.Nodes() {
		b.Field(0).(*array.StringBuilder).Append(n.ID)
		if n.Address == "" {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(n.Address)
		}
		ts(2, n.Started)
		ts(3, n.LastHeartbeat)
		b.Field(4).(*array.Int64Builder).Append(int64(owned[n.ID]))
		isSelf := n.ID == self
		b.Field(5).(*array.BooleanBuilder).Append(isSelf)
		if !isSelf {
			b.Field(6).AppendNull()
			b.Field(7).AppendNull()
			continue
		}
		if err := c.Ready(); err != nil {
			b.Field(6).(*array.BooleanBuilder).Append(false)
			b.Field(7).(*array.StringBuilder).Append(err.Error())
		} else {
			b.Field(6).(*array.BooleanBuilder).Append(true)
			b.Field(7).AppendNull()
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewRecordReader(NodesSchema, []arrow.RecordBatch{rec})
}

// TablesOwned counts the lake-stream tables of the warehouse by the node
// that owns them (c.Owner); tables no node is known to own are not
// counted. On a node that runs alone (c.Self() == "") every table is the
// node's: the count is under "".
func (s *Service) TablesOwned(ctx context.Context, c Cluster) (map[string]int, error) {
	owner := c.Owner
	if c.Self() == "" {
		owner = func(string) (string, bool) { return "", true }
	}
	out := map[string]int{}
	err := s.eachRealtime(ctx, func(_, _ string, m *tableMeta) error {
		if id, ok := owner(m.id); ok {
			out[id]++
		}
		return nil
	})
	return out, err
}
