package console

import (
	"context"
	"fmt"
	"runtime/metrics"
	"sort"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/internal/memguard"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
)

// State is the document GET /ui/api/state answers. Times are Unix
// milliseconds (0: none); durations seconds.
type State struct {
	Now     int64  `json:"now"` // the server's clock
	Version string `json:"version"`
	Node    string `json:"node"` // --node-id; "" for a server alone
	Started int64  `json:"started"`
	// User is who is looking: the authenticated user, "" when the page is open.
	User       string      `json:"user"`
	Memory     Memory      `json:"memory"`
	Load       Load        `json:"load"`
	Tables     []Table     `json:"tables"`
	Statements []Statement `json:"statements"`
	Nodes      []Node      `json:"nodes"`
	// Errors says what could not be read (the rest is shown).
	Errors []string `json:"errors"`
}

// Memory is the process's memory beside its bounds.
type Memory struct {
	ResidentBytes int64 `json:"resident_bytes"` // 0: unknown
	GoHeapBytes   int64 `json:"go_heap_bytes"`
	LimitBytes    int64 `json:"limit_bytes"`   // --memory-limit; 0: not given
	CeilingBytes  int64 `json:"ceiling_bytes"` // --memory-ceiling; 0: not given
}

// Load is the statements and streams at this moment.
type Load struct {
	Running int `json:"running"`
	Queued  int `json:"queued"`
	Streams int `json:"streams"`
}

// Table is one table of the warehouse.
type Table struct {
	Database   string   `json:"database"`
	Table      string   `json:"table"`
	PrimaryKey []string `json:"primary_key"` // empty: an append table
	Buckets    int      `json:"buckets"`     // -1: dynamic
	Realtime   bool     `json:"realtime"`    // keeps a log (t$rt)
	// Rows is LakeRows plus LagRows: exact for an append table; for a
	// primary-key table, versions of a key not merged yet count more than
	// once.
	Rows      int64 `json:"rows"`
	LakeRows  int64 `json:"lake_rows"` // the latest snapshot's record count
	SizeBytes int64 `json:"size_bytes"`
	Files     int64 `json:"files"`
	// SnapshotID is the latest snapshot (0: none yet), committed at
	// SnapshotTime.
	SnapshotID       int64   `json:"snapshot_id"`
	SnapshotTime     int64   `json:"snapshot_time"`
	FreshnessSeconds float64 `json:"freshness_seconds"` // the tiering interval; 0 without a log
	LagRows          int64   `json:"lag_rows"`
	// LagSeconds is the age of the oldest log row not in the lake (0:
	// none), -1 when unknown.
	LagSeconds   float64 `json:"lag_seconds"`
	FailedRounds int64   `json:"failed_rounds"`
	LastError    string  `json:"last_error"`
	RetryAt      int64   `json:"retry_at"`
	Owner        string  `json:"owner"` // the node that tiers it; "" alone or unknown
	// Error says why the table could not be read; the rest is then partial.
	Error string `json:"error"`
}

// Statement is one statement running or queued (sys.statements).
type Statement struct {
	ID       int64  `json:"id"`
	User     string `json:"user"`
	Client   string `json:"client"`
	Lane     string `json:"lane"`
	Kind     string `json:"kind"`
	State    string `json:"state"`
	Queued   int64  `json:"queued_at"`
	Started  int64  `json:"started_at"` // 0 while queued
	RowsSent int64  `json:"rows_sent"`
	SQL      string `json:"sql"`
}

// Node is one node of the cluster (sys.nodes).
type Node struct {
	ID            string `json:"id"`
	Address       string `json:"address"`
	Started       int64  `json:"started"`
	LastHeartbeat int64  `json:"last_heartbeat"`
	TablesOwned   int    `json:"tables_owned"`
	Self          bool   `json:"self"`
	Ready         bool   `json:"ready"` // this node's row only
	LastError     string `json:"last_error"`
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// state reads the server's state now.
func (c *Console) state(ctx context.Context, user string) *State {
	now := time.Now()
	st := &State{
		Now: now.UnixMilli(), Version: c.opts.Version, Started: millis(c.opts.Started), User: user,
		Tables: []Table{}, Statements: []Statement{}, Nodes: []Node{}, Errors: []string{},
	}
	if cl := c.opts.Cluster; cl != nil {
		st.Node = cl.Self()
	}
	st.Memory = Memory{ResidentBytes: memguard.ResidentBytes(), GoHeapBytes: goHeap(), LimitBytes: c.opts.MemoryLimit, CeilingBytes: c.opts.MemoryCeiling}
	if a := c.opts.Admission; a != nil {
		for _, s := range a.Statements() {
			st.Statements = append(st.Statements, Statement{
				ID: s.ID, User: s.User, Client: s.Client, Lane: s.Lane.String(), Kind: s.Kind, State: string(s.State),
				Queued: millis(s.Queued), Started: millis(s.Started), RowsSent: s.RowsSent, SQL: s.SQL,
			})
			if s.Started.IsZero() {
				st.Load.Queued++
			} else {
				st.Load.Running++
			}
		}
	}
	if c.opts.Streams != nil {
		st.Load.Streams = c.opts.Streams()
	}
	if c.opts.Lake != nil {
		st.Tables = c.tables(ctx, &st.Errors)
	}
	st.Nodes = c.nodes(st.Tables)
	return st
}

// goHeap is the memory the Go heap holds: live and not yet collected objects.
func goHeap() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// tables lists the warehouse's tables by database and name, each with its
// sys.tiering rows summed up. What cannot be read is said in errs.
func (c *Console) tables(ctx context.Context, errs *[]string) []Table {
	ls := c.opts.Lake
	status, err := c.tiering(ctx)
	if err != nil {
		*errs = append(*errs, fmt.Sprintf("read the tiering status (sys.tiering): %v", err))
	}
	dbs, err := ls.Databases(ctx)
	if err != nil {
		*errs = append(*errs, fmt.Sprintf("list the databases: %v", err))
		return []Table{}
	}
	out := []Table{}
	seen := map[string]bool{}
	for _, db := range dbs {
		names, err := ls.Tables(ctx, db)
		if err != nil {
			*errs = append(*errs, fmt.Sprintf("list the tables of %s: %v", db, err))
			continue
		}
		for _, name := range names {
			t, err := ls.Table(ctx, db, name)
			if err != nil {
				out = append(out, Table{Database: db, Table: name, Error: err.Error(), LagSeconds: -1})
				continue
			}
			row := c.table(ctx, t, status[db+"."+name])
			seen[c.sizes.key(t)] = true
			out = append(out, row)
		}
	}
	c.sizes.keep(seen)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Database != out[j].Database {
			return out[i].Database < out[j].Database
		}
		return out[i].Table < out[j].Table
	})
	return out
}

// table is one table's row; ts is its tiering status (nil: not a
// lake-stream table, or its status could not be read).
func (c *Console) table(ctx context.Context, t *lake.Table, ts *tableStatus) Table {
	sc := t.Schema()
	row := Table{
		Database: t.Database(), Table: t.Name(), PrimaryKey: append([]string{}, sc.PrimaryKeys...),
		Buckets: sc.NumBuckets(), Realtime: lakestream.Realtime(t), LagSeconds: -1,
	}
	if row.Realtime {
		if c.opts.Freshness != nil {
			row.FreshnessSeconds = c.opts.Freshness(t).Seconds()
		}
	}
	snap, err := t.RecentSnapshot(ctx)
	if err == nil && ts != nil && ts.snapshotID > 0 && (snap == nil || snap.ID != ts.snapshotID) {
		// The lag is counted from the snapshot sys.tiering read: the rows
		// are counted in the same one, or rows tiered meanwhile would
		// count twice (or not at all).
		snap, err = t.Snapshot(ctx, ts.snapshotID)
	}
	if err != nil {
		row.Error = fmt.Sprintf("read the latest snapshot: %v", err)
		return row
	}
	if snap != nil {
		row.SnapshotID, row.SnapshotTime, row.LakeRows = snap.ID, snap.TimeMillis, snap.TotalRecordCount
		sz, err := c.sizes.of(ctx, t, snap)
		if err != nil {
			row.Error = fmt.Sprintf("read the data files of snapshot %d: %v", snap.ID, err)
		}
		row.SizeBytes, row.Files = sz.bytes, sz.files
	}
	row.Rows = row.LakeRows
	if ts != nil {
		row.LagRows, row.Rows = ts.lagRows, row.LakeRows+ts.lagRows
		row.LagSeconds = -1
		if ts.lagSecondsKnown {
			row.LagSeconds = ts.lagSeconds
		}
		row.FailedRounds, row.LastError, row.RetryAt, row.Owner = ts.failedRounds, ts.lastError, ts.retryAt, ts.owner
	}
	return row
}

// nodes lists the cluster's nodes (sys.nodes), with the tables each owns
// among tables.
func (c *Console) nodes(tables []Table) []Node {
	cl := c.opts.Cluster
	if cl == nil {
		return []Node{}
	}
	self := cl.Self()
	owned := map[string]int{}
	for _, t := range tables {
		switch {
		case !t.Realtime:
		case self == "":
			owned[""]++ // alone: every lake-stream table is the node's
		case t.Owner != "":
			owned[t.Owner]++
		}
	}
	out := []Node{}
	for _, n := range cl.Nodes() {
		nd := Node{ID: n.ID, Address: n.Address, Started: millis(n.Started), LastHeartbeat: millis(n.LastHeartbeat), TablesOwned: owned[n.ID], Self: n.ID == self}
		if nd.Self {
			nd.Ready = true
			if err := cl.Ready(); err != nil {
				nd.Ready, nd.LastError = false, err.Error()
			}
		}
		out = append(out, nd)
	}
	return out
}

// tableStatus is sys.tiering summed up over one table's buckets, as the
// metrics sum it.
type tableStatus struct {
	snapshotID      int64
	lagRows         int64
	lagSeconds      float64 // the largest known over the buckets
	lagSecondsKnown bool
	failedRounds    int64
	lastError       string
	retryAt         int64
	owner           string
}

// tiering reads sys.tiering and sums it up by "database.table".
func (c *Console) tiering(ctx context.Context) (map[string]*tableStatus, error) {
	r, err := c.opts.Lake.StatusIn(ctx, c.opts.Cluster)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	sc := r.Schema()
	col := map[string]int{}
	for _, name := range []string{"database", "table", "lag_rows", "snapshot_id", "lag_seconds", "failed_rounds", "last_error", "retry_at", "owner"} {
		is := sc.FieldIndices(name)
		if len(is) != 1 {
			return nil, fmt.Errorf("sys.tiering has no column %q", name)
		}
		col[name] = is[0]
	}
	out := map[string]*tableStatus{}
	for r.Next() {
		rec := r.RecordBatch()
		dbs, ok1 := rec.Column(col["database"]).(*array.String)
		names, ok2 := rec.Column(col["table"]).(*array.String)
		lagRows, ok3 := rec.Column(col["lag_rows"]).(*array.Int64)
		snaps, ok4 := rec.Column(col["snapshot_id"]).(*array.Int64)
		lagSecs, ok5 := rec.Column(col["lag_seconds"]).(*array.Float64)
		failed, ok6 := rec.Column(col["failed_rounds"]).(*array.Int64)
		lastErr, ok7 := rec.Column(col["last_error"]).(*array.String)
		retry, ok8 := rec.Column(col["retry_at"]).(*array.Timestamp)
		owners, ok9 := rec.Column(col["owner"]).(*array.String)
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || !ok7 || !ok8 || !ok9 {
			return nil, fmt.Errorf("sys.tiering columns have unexpected types: %s", sc)
		}
		unit := retry.DataType().(*arrow.TimestampType).Unit
		for i := 0; i < int(rec.NumRows()); i++ {
			k := dbs.Value(i) + "." + names.Value(i)
			ts := out[k]
			if ts == nil {
				ts = &tableStatus{}
				out[k] = ts
			}
			ts.lagRows += lagRows.Value(i)
			if snaps.IsValid(i) {
				ts.snapshotID = snaps.Value(i)
			}
			if lagSecs.IsValid(i) {
				ts.lagSeconds = max(ts.lagSeconds, lagSecs.Value(i))
				ts.lagSecondsKnown = true
			}
			// The rounds' status and the owner are the table's, the same
			// on each of its rows.
			ts.failedRounds = max(ts.failedRounds, failed.Value(i))
			if lastErr.IsValid(i) {
				ts.lastError = lastErr.Value(i)
			}
			if retry.IsValid(i) {
				ts.retryAt = retry.Value(i).ToTime(unit).UnixMilli()
			}
			if owners.IsValid(i) {
				ts.owner = owners.Value(i)
			}
		}
	}
	return out, r.Err()
}

// size is what a snapshot's live data files hold.
type size struct{ bytes, files int64 }

// sizeCache keeps each table's size at its latest snapshot: reading a
// snapshot's manifests every poll would cost a read of each on an object
// store, and a snapshot never changes.
type sizeCache struct {
	mu sync.Mutex
	m  map[string]sizeEntry // by table (key)
}

type sizeEntry struct {
	snapshot int64
	size     size
}

func (s *sizeCache) key(t *lake.Table) string { return lakestream.TableID(t) + "\x00" + t.FullName() }

// of returns the size of t's live data files in snap.
func (s *sizeCache) of(ctx context.Context, t *lake.Table, snap *lake.Snapshot) (size, error) {
	k := s.key(t)
	s.mu.Lock()
	e, ok := s.m[k]
	s.mu.Unlock()
	if ok && e.snapshot == snap.ID {
		return e.size, nil
	}
	rows, err := t.BucketStats(ctx, snap, true)
	if err != nil {
		return size{}, err
	}
	var sz size
	for _, r := range rows {
		sz.bytes += r.FileSizeInBytes
		sz.files += r.FileCount
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]sizeEntry{}
	}
	s.m[k] = sizeEntry{snapshot: snap.ID, size: sz}
	return sz, nil
}

// keep forgets the tables not in seen (dropped or renamed).
func (s *sizeCache) keep(seen map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.m {
		if !seen[k] {
			delete(s.m, k)
		}
	}
}
