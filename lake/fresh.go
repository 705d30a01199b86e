package lake

import (
	"bytes"
	"context"
	"sync"
	"time"
)

// What a Catalog knows of its tables' latest snapshots and schemas, shared by every Table
// of one table path that it opened.
//
// A commit by this process (Write.Commit, Compact, CompactAppend) tells it the snapshot it
// created, so this process's next read of the table uses it without asking the store.
// Without RefreshEvery, LatestSnapshot and RecentSnapshot check what is known at every call
// (two stats: cheap on a local disk). With RefreshEvery(d), RecentSnapshot and
// CheckSchemaRecent answer from what is known when a check that began less than 2d ago
// confirmed it, and a background loop checks every table used recently once every d; the
// query path then makes no request to learn the latest snapshot or schema. What another
// process committed (another flightd node, Java Paimon) is used within 2d: the answer is a
// snapshot (schema) that was the latest when a check no more than 2d before the call began.
// When the loop falls behind or its checks fail, a call checks the store itself.

// idleRefresh is how long, in refresh intervals, a table is refreshed in the background
// after its last recent read: the loop stops asking about tables nobody reads.
const idleRefresh = 10

// latestSnapshot is what a Catalog knows of one table's latest snapshot and schema.
type latestSnapshot struct {
	mu       sync.Mutex
	valid    bool      // snap (nil: the table had no snapshot) was the latest at verified
	snap     *Snapshot //
	version  string    // of snap's file; "" for a snapshot this process committed, until checked
	verified time.Time // when the check (or commit) that confirmed snap began
	used     time.Time // the last recent read (RecentSnapshot, CheckSchemaRecent)
	table    *Table    // the Table that last asked, for the background check

	schema     *schemaFile // the schema file last found to be the latest (nil: none)
	schemaAt   time.Time   // when the check that found it began
	schemaUsed time.Time   // the last CheckSchemaRecent
}

func (l *latestSnapshot) remember(s *Snapshot, version string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.valid || l.snap == nil || s.ID > l.snap.ID || (s.ID == l.snap.ID && !at.Before(l.verified)) {
		l.valid, l.snap, l.version, l.verified = true, s, version, at
	}
}

// none remembers that the table had no snapshot at at.
func (l *latestSnapshot) none(at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.valid || (l.snap == nil && at.After(l.verified)) {
		l.valid, l.snap, l.version, l.verified = true, nil, "", at
	}
}

// confirm records that s (nil: no snapshot), remembered, was still the latest at at, with
// its file at version.
func (l *latestSnapshot) confirm(s *Snapshot, version string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.valid && l.snap == s {
		if l.version == "" {
			l.version = version
		}
		if at.After(l.verified) {
			l.verified = at
		}
	}
}

func (l *latestSnapshot) get() (*Snapshot, string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snap, l.version, l.valid
}

func (l *latestSnapshot) forget(s *Snapshot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.valid && l.snap == s {
		l.valid, l.snap, l.version, l.verified = false, nil, "", time.Time{}
	}
}

// reset forgets everything (the table was dropped or renamed by this process).
func (l *latestSnapshot) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.valid, l.snap, l.version, l.verified = false, nil, "", time.Time{}
	l.schema, l.schemaAt = nil, time.Time{}
	l.table = nil
}

// recent returns the known snapshot when a check that began within bound before now
// confirmed it, and marks the table used by t.
func (l *latestSnapshot) recent(t *Table, now time.Time, bound time.Duration) (*Snapshot, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.used, l.table = now, t
	if l.valid && now.Sub(l.verified) < bound {
		return l.snap, true
	}
	return nil, false
}

// schemaRecent reports whether f was found to be the latest schema file by a check that
// began within bound before now, and marks the table used by t.
func (l *latestSnapshot) schemaRecent(t *Table, f *schemaFile, now time.Time, bound time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.used, l.schemaUsed, l.table = now, now, t
	return l.schema != nil && now.Sub(l.schemaAt) < bound && sameSchemaFile(l.schema, f)
}

func (l *latestSnapshot) schemaCurrent(f *schemaFile, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.schema == nil || at.After(l.schemaAt) {
		l.schema, l.schemaAt = f, at
	}
}

func (l *latestSnapshot) schemaChanged(f *schemaFile) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.schema != nil && sameSchemaFile(l.schema, f) {
		l.schema, l.schemaAt = nil, time.Time{}
	}
}

func sameSchemaFile(a, b *schemaFile) bool {
	return a == b || (a.id == b.id && bytes.Equal(a.data, b.data))
}

// tableStates are a Catalog's latestSnapshots by table path.
type tableStates struct {
	mu     sync.Mutex
	m      map[string]*latestSnapshot
	every  time.Duration // RefreshEvery's interval; 0: check at every call
	cancel context.CancelFunc
	done   chan struct{}
}

// state returns the shared state of the table at path.
func (c *Catalog) state(path string) *latestSnapshot {
	c.states.mu.Lock()
	defer c.states.mu.Unlock()
	if c.states.m == nil {
		c.states.m = map[string]*latestSnapshot{}
	}
	l := c.states.m[path]
	if l == nil {
		l = &latestSnapshot{}
		c.states.m[path] = l
	}
	return l
}

// forgetState forgets what is known of the tables at path and below (dropped, renamed).
func (c *Catalog) forgetState(path string) {
	c.states.mu.Lock()
	defer c.states.mu.Unlock()
	for p, l := range c.states.m {
		if p == path || (len(p) > len(path) && p[:len(path)] == path && p[len(path)] == '/') {
			l.reset()
		}
	}
}

func (c *Catalog) refreshInterval() time.Duration {
	c.states.mu.Lock()
	defer c.states.mu.Unlock()
	return c.states.every
}

// RefreshEvery makes recent reads (RecentSnapshot, CheckSchemaRecent) answer without a
// request to the store, from what this process committed and what a background loop,
// checking every table read in the last 10 intervals once every d, found; see the
// package doc. For warehouses where a request is a round trip to a store (S3); locally a
// check is two stats, and a catalog without RefreshEvery checks at every call. stop ends
// the loop and waits for it; recent reads then check at every call again.
func (c *Catalog) RefreshEvery(d time.Duration) (stop func()) {
	if d <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	c.states.mu.Lock()
	if c.states.cancel != nil {
		c.states.mu.Unlock()
		cancel()
		panic("lake: RefreshEvery called twice")
	}
	c.states.every, c.states.cancel, c.states.done = d, cancel, done
	c.states.mu.Unlock()
	go func() {
		defer close(done)
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				c.refresh(ctx)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			c.states.mu.Lock()
			c.states.every, c.states.cancel, c.states.done = 0, nil, nil
			c.states.mu.Unlock()
		})
	}
}

// refreshWorkers bounds the tables checked at once by a background refresh.
const refreshWorkers = 8

// refresh checks, at once, the latest snapshot and schema of every table read recently,
// as the background loop does every interval.
func (c *Catalog) refresh(ctx context.Context) {
	now := c.now()
	c.states.mu.Lock()
	every := c.states.every
	var due []*latestSnapshot
	for _, l := range c.states.m {
		l.mu.Lock()
		if l.table != nil && now.Sub(l.used) < idleRefresh*every {
			due = append(due, l)
		}
		l.mu.Unlock()
	}
	c.states.mu.Unlock()
	sem := make(chan struct{}, refreshWorkers)
	var wg sync.WaitGroup
	for _, l := range due {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			l.refresh(ctx, now, idleRefresh*every)
		}()
	}
	wg.Wait()
}

// refresh checks the table's latest snapshot and schema against the store; a failed check
// leaves what was known to age out.
func (l *latestSnapshot) refresh(ctx context.Context, now time.Time, idle time.Duration) {
	l.mu.Lock()
	t, schema := l.table, l.schema
	if now.Sub(l.schemaUsed) >= idle {
		schema = nil // only snapshots are read recently (a cluster checks schemas itself)
	}
	l.mu.Unlock()
	if t == nil {
		return
	}
	var wg sync.WaitGroup
	if schema != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := t.cat.now()
			if state, err := checkSchemaFile(ctx, t, schema); err == nil {
				if state == SchemaCurrent {
					l.schemaCurrent(schema, at)
				} else {
					l.schemaChanged(schema)
				}
			}
		}()
	}
	_, _ = t.LatestSnapshot(ctx)
	wg.Wait()
}

// RecentSnapshot is LatestSnapshot for reads: with RefreshEvery(d) it returns, without a
// request, the snapshot known to have been the latest less than 2d ago (committed by this
// process, or confirmed by a check), and checks the store only when nothing that recent is
// known. A snapshot this process committed is returned by its next call, and so is any
// snapshot a LatestSnapshot call of this catalog returned (for the table), or a newer one:
// an expiration that read the latest snapshot before it decided never deletes what a read
// that chose after it gets. Without RefreshEvery it is LatestSnapshot.
func (t *Table) RecentSnapshot(ctx context.Context) (*Snapshot, error) {
	if d := t.cat.refreshInterval(); d > 0 {
		if snap, ok := t.latest.recent(t, t.cat.now(), 2*d); ok {
			return snap, nil
		}
	}
	return t.LatestSnapshot(ctx)
}

// CheckSchemaRecent is CheckSchema for reads: with RefreshEvery(d) it answers SchemaCurrent
// without a request when a check that began less than 2d ago found t's schema file to be
// the latest; otherwise it checks (CheckSchema) and remembers a current answer.
func (t *Table) CheckSchemaRecent(ctx context.Context) (SchemaState, error) {
	d := t.cat.refreshInterval()
	if d <= 0 {
		return t.CheckSchema(ctx)
	}
	if t.opened != nil && t.latest.schemaRecent(t, t.opened, t.cat.now(), 2*d) {
		return SchemaCurrent, nil
	}
	at := t.cat.now()
	state, err := t.CheckSchema(ctx)
	if err == nil && state == SchemaCurrent {
		t.latest.schemaCurrent(t.opened, at)
	}
	return state, err
}

// committed records snap, which this process just created (the exclusive create that
// began at at succeeded), as the latest: the next recent read uses it.
func (t *Table) committed(snap *Snapshot, at time.Time) {
	t.latest.remember(snap, "", at)
}
