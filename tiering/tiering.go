package tiering

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/flightd/flightd/internal/background"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
)

// Options configure the tiering service.
type Options struct {
	// Interval is the default freshness: how often each table is tiered
	// unless its lakestream.freshness option says otherwise.
	Interval time.Duration
	// MaxRowsPerRound bounds the rows a round holds in memory: every
	// MaxRowsPerRound rows (or RoundMemory bytes) an append table's are
	// encoded into data files and a primary-key table's sorted into runs
	// spilled to SpillDir, which the commit merges into one file per
	// bucket. A round reads at most 64 times that per bucket.
	MaxRowsPerRound int64
	// RoundMemory bounds the bytes of log rows a round holds in memory
	// before it flushes them as MaxRowsPerRound does (default
	// DefaultRoundMemory).
	RoundMemory int64
	// SpillDir is where primary-key rounds spill sorted runs (scratch
	// files, removed when the round commits or fails; default the system's
	// temporary directory). A local directory; flightd uses one under its
	// data directory and empties it at start.
	SpillDir string
	// BurstRate is the log growth, in rows a second, above which an append
	// table is not staged (see doc.go, Staging); default 1M rows a second
	// per background worker, about what a worker encodes.
	BurstRate float64
	// Retention is how long log records stay after the lake holds them.
	Retention time.Duration
	// CollectEvery is how often retention runs.
	CollectEvery time.Duration
	// CompactMinFiles: after a round, a bucket with at least this many data
	// files (of an append table: small ones) is compacted (see doc.go).
	CompactMinFiles int
	// Expire configures snapshot expiration (run with the log retention);
	// its Protect and Now are set per run.
	Expire lake.ExpireOptions
	// OrphansEvery is how often files no snapshot references are removed
	// (only those older than a day).
	OrphansEvery time.Duration
	// Observe, if set, hears about every round TierTable runs (scheduled,
	// drained or called directly), including rounds with nothing to tier.
	// It runs on the goroutine that ran the round, with the table's round
	// lock held: it must be quick.
	Observe func(Round)
	// Owns, when set, says whether this node tiers and maintains a table
	// (by table id): with several nodes over one warehouse, one owns each
	// table (see package cluster). Rounds, log retention, snapshot
	// expiration, compaction and orphan cleanup run only for owned tables.
	// Ownership only saves work: two nodes that both think they own a
	// table cannot both commit a snapshot (the commit is conditional), and
	// the loser plans again from the winner's offsets.
	Owns func(tableID string) bool
	// PinnedElsewhere, when set, returns the oldest snapshot of a table
	// (by table id) that a read on another node uses (0: none):
	// expiration keeps it and everything newer.
	PinnedElsewhere func(tableID string) int64
	Logger          *slog.Logger
	// Clock is the scheduler's time (default: the system's).
	Clock Clock
}

// Round describes one finished round, for Options.Observe.
type Round struct {
	Database, Table string
	Result          Result        // zero when the round failed
	Err             error         // the round failed: nothing was committed
	CompactErr      error         // the round committed but its compaction failed
	Duration        time.Duration // the whole round, compaction included
}

// DefaultRoundMemory is the default Options.RoundMemory.
const DefaultRoundMemory = 256 << 20

// DefaultOptions returns the defaults: 30s interval, 1M rows (at most
// DefaultRoundMemory bytes) held in memory per round,
// 24h log retention checked every minute, compaction at 5 files per
// bucket, Paimon's snapshot retention (10 to 100 snapshots, 1h), orphan
// cleanup daily.
func DefaultOptions() Options {
	return Options{
		Interval: 30 * time.Second, MaxRowsPerRound: 1 << 20, RoundMemory: DefaultRoundMemory, Retention: 24 * time.Hour, CollectEvery: time.Minute,
		CompactMinFiles: 5, Expire: lake.ExpireOptions{RetainMin: 10, RetainMax: 100, OlderThan: time.Hour},
		OrphansEvery: 24 * time.Hour,
	}
}

// Service runs tiering rounds. TierTable serialises rounds per table.
type Service struct {
	ls   *lakestream.Service
	opts Options
	lg   *slog.Logger

	mu     sync.Mutex
	locks  map[string]*sync.Mutex
	staged map[tableKey]*staged              // append tables' next rounds (see stage.go)
	health map[string]lakestream.RoundStatus // by table id, see health.go

	// The scheduler's state, used by the Run goroutine only (see runDue).
	sched  map[string]*schedule // by table id
	passes int
	// notOwned holds the tables another node owned at the last pass (see
	// Options.Owns): one this node takes over is due at once.
	notOwned map[string]bool
}

// schedule is what the scheduler knows of one table.
type schedule struct {
	last     time.Time     // start of the pass that ran the last successful round
	failures int           // failed rounds since the last successful one
	backoff  time.Duration // the wait after the last failed round
	retry    time.Time     // after a failed round: when to try again
	catchUp  bool          // the last round was capped: due again at once
	badOpt   string        // a lakestream.freshness value already warned about
	seen     time.Time     // the last pass that listed the table
	logEnd   int64         // the sum of the table's high watermarks at logAt
	logAt    time.Time     // the last pass that read logEnd
}

// bursting records end, the sum of the table's high watermarks now, and
// reports whether the log grew faster than rate rows a second since the
// pass before.
func (sc *schedule) bursting(now time.Time, end int64, rate float64) bool {
	prevEnd, prevAt := sc.logEnd, sc.logAt
	sc.logEnd, sc.logAt = end, now
	dt := now.Sub(prevAt).Seconds()
	return !prevAt.IsZero() && dt > 0 && end > prevEnd && float64(end-prevEnd)/dt > rate
}

// dueAt is when the table's next round is due: after a failed round when
// its backoff ends, else one interval after the last successful round (at
// once after a capped one).
func (sc *schedule) dueAt(now time.Time, every time.Duration) time.Time {
	switch {
	case sc.failures > 0:
		return sc.retry
	case sc.catchUp:
		return now
	}
	return sc.last.Add(every)
}

// failed backs the table off after a failed round: the next attempt comes
// firstBackoff later, then twice the wait before, at most every. It logs
// once per backoff step (the wait grew), and once the wait is capped on
// the 2^k-th consecutive failure only (errors name new file paths each
// time, so they are not compared); sys.tiering shows every failure and
// the newest error.
func (s *Service) failed(sc *schedule, id, table string, now time.Time, every time.Duration, err error) {
	sc.failures++
	wait := backoffAfter(sc.failures, every)
	grew := wait > sc.backoff
	sc.backoff, sc.retry = wait, now.Add(wait)
	s.retryAt(id, sc.retry)
	if grew || sc.failures&(sc.failures-1) == 0 {
		s.lg.Warn("tiering round failed", "table", table, "failed_rounds", sc.failures, "retry_in", wait, "err", err)
	}
}

// succeeded records a successful round.
func (s *Service) succeeded(sc *schedule, table string, now time.Time, more bool) {
	if sc.failures > 0 {
		s.lg.Info("tiering resumed", "table", table, "failed_rounds", sc.failures)
	}
	sc.last, sc.catchUp = now, more
	sc.failures, sc.backoff, sc.retry = 0, 0, time.Time{}
}

// New returns a tiering service over ls.
func New(ls *lakestream.Service, opts Options) *Service {
	d := DefaultOptions()
	if opts.Interval <= 0 {
		opts.Interval = d.Interval
	}
	if opts.MaxRowsPerRound <= 0 {
		opts.MaxRowsPerRound = d.MaxRowsPerRound
	}
	if opts.RoundMemory <= 0 {
		opts.RoundMemory = d.RoundMemory
	}
	if opts.Retention <= 0 {
		opts.Retention = d.Retention
	}
	if opts.CollectEvery <= 0 {
		opts.CollectEvery = d.CollectEvery
	}
	if opts.CompactMinFiles <= 0 {
		opts.CompactMinFiles = d.CompactMinFiles
	}
	if opts.Expire.RetainMin <= 0 {
		opts.Expire.RetainMin = d.Expire.RetainMin
	}
	if opts.Expire.RetainMax <= 0 {
		opts.Expire.RetainMax = d.Expire.RetainMax
	}
	if opts.Expire.OlderThan <= 0 {
		opts.Expire.OlderThan = d.Expire.OlderThan
	}
	if opts.OrphansEvery <= 0 {
		opts.OrphansEvery = d.OrphansEvery
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = systemClock{}
	}
	s := &Service{ls: ls, opts: opts, lg: opts.Logger, locks: map[string]*sync.Mutex{}, staged: map[tableKey]*staged{}, health: map[string]lakestream.RoundStatus{}, sched: map[string]*schedule{}}
	ls.SetDropGuard(s.beforeDrop)
	return s
}

// beforeDrop waits for db.name's round or staging pass, aborts its staged
// round, and keeps the table's lock until the drop is done, so that no
// file is written into a directory being removed.
func (s *Service) beforeDrop(db, name string) (release func()) {
	l := s.tableLock(db, name)
	l.Lock()
	s.dropStaged(db, name)
	return l.Unlock
}

// Result describes one round.
type Result struct {
	Snapshot  int64 // the committed snapshot id, 0 when nothing was committed
	Rows      int64 // log rows moved into the lake
	Compacted int64 // the COMPACT snapshot that followed, 0 when none
	More      bool  // the round was capped (see readLog): run again soon
}

var errStop = errors.New("stop")

// TierTable runs one round for db.name.
func (s *Service) TierTable(ctx context.Context, db, name string) (Result, error) {
	l := s.tableLock(db, name)
	l.Lock()
	defer l.Unlock()
	start := time.Now()
	var compactErr error
	res, err := s.tierTable(ctx, db, name, &compactErr)
	if t, terr := s.ls.Table(ctx, db, name); terr == nil && ctx.Err() == nil {
		s.roundDone(lakestream.TableID(t), err)
	}
	if s.opts.Observe != nil {
		s.opts.Observe(Round{Database: db, Table: name, Result: res, Err: err, CompactErr: compactErr, Duration: time.Since(start)})
	}
	return res, err
}

// beforeCommitHook, when set (by tests), runs in a round right before its
// snapshot commit.
var beforeCommitHook func(table string)

// tierTable is one round; the caller holds the table's lock. A failed
// compaction (the round stands) is reported in *compactErr.
func (s *Service) tierTable(ctx context.Context, db, name string, compactErr *error) (Result, error) {
	t, err := s.ls.Table(ctx, db, name)
	if err != nil {
		if ctx.Err() == nil { // gone or unreadable, not just this call cancelled
			s.dropStaged(db, name)
		}
		return Result{}, err
	}
	if !lakestream.Realtime(t) {
		s.dropStaged(db, name)
		return Result{}, nil
	}
	snap, err := t.LatestSnapshot(ctx)
	if err != nil {
		return Result{}, err
	}
	// The rows staged since the last round (append tables) are this
	// round's first, if they were read on what is still the newest
	// snapshot; else the round starts over from that snapshot's offsets.
	st := s.takeStaged(db, name)
	if st != nil && !st.plannedOn(t, snap) {
		st.w.Abort()
		st = nil
	}
	if st == nil {
		if st, err = s.plan(ctx, t, snap); err != nil {
			return Result{}, err
		}
	}
	committed := false
	defer func() {
		if !committed {
			st.w.Abort()
		}
	}()
	staged := st.rows
	more, err := s.readLog(ctx, st, true)
	if err != nil {
		return Result{}, fmt.Errorf("tiering: %s.%s: %w", db, name, err)
	}
	if st.rows == 0 {
		return Result{}, nil
	}
	w, next, rows, pk := st.w, st.next, st.rows, st.pk
	id := lakestream.TableID(t)
	var expected, ident int64
	if snap != nil {
		expected, ident = snap.ID, snap.ID+1
	} else {
		ident = 1
	}
	if beforeCommitHook != nil {
		beforeCommitHook(db + "." + name)
	}
	ns, err := w.Commit(ctx, lake.CommitOptions{
		CommitUser:     lakestream.CommitUser,
		Identifier:     ident,
		ExpectedLatest: expected,
		Properties:     map[string]string{lakestream.OffsetsProperty: next.Encode()},
	})
	if err != nil {
		return Result{}, fmt.Errorf("tiering: commit %s.%s: %w", db, name, err)
	}
	committed = true
	s.ls.Tiered(id, next)
	s.lg.Info("tiered", "table", db+"."+name, "snapshot", ns.ID, "rows", rows, "staged", staged)
	res := Result{Snapshot: ns.ID, Rows: rows, More: more}
	{
		// Keep level 0 short so reads (ours and Java's) merge few files, and
		// an append table from growing a file per bucket and round forever.
		// The COMPACT snapshot carries this round's offsets forward.
		// An append table's small files wait until they fill a file (or
		// pile up to twice the minimum), so that a busy table's rows are
		// rewritten once, not each time a few more rounds arrive.
		copts := lake.CompactOptions{CommitUser: lakestream.CommitUser, ExpectedLatest: ns.ID,
			MinFiles: s.opts.CompactMinFiles, MaxFiles: 2 * s.opts.CompactMinFiles}
		var cs *lake.Snapshot
		var err error
		background.Do(func() { // merging and encoding: low priority, like the round's encoding
			if pk {
				cs, err = t.Compact(ctx, copts)
			} else {
				copts.TargetFileSize = appendCompactTarget
				cs, err = t.CompactAppend(ctx, copts)
			}
		})
		switch {
		case errors.Is(err, lake.ErrCommitConflict):
			// another committer was faster; the next round tries again
		case err != nil:
			*compactErr = err
			s.lg.Warn("compaction failed", "table", db+"."+name, "err", err)
		case cs != nil:
			res.Compacted = cs.ID
			s.lg.Info("compacted", "table", db+"."+name, "snapshot", cs.ID)
		}
	}
	return res, nil
}

// appendCompactTarget is the file size tiering compacts append tables to.
// Files below 70% of it (a slow table's rounds) are merged; a busy table's
// rounds already write larger files and are left alone. An output's inputs
// are decoded in memory together, so this also bounds the memory compaction
// takes (Paimon's own default, 256 MiB, held ~3 GiB under sustained ingest).
const appendCompactTarget = 32 << 20

// Drain runs rounds until everything acknowledged before the call is in the
// lake.
func (s *Service) Drain(ctx context.Context, db, name string) error {
	for {
		res, err := s.TierTable(ctx, db, name)
		if err != nil {
			return err
		}
		if res.Rows == 0 {
			return nil
		}
	}
}

func (s *Service) tableLock(db, name string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := db + "\x00" + name
	l := s.locks[k]
	if l == nil {
		l = &sync.Mutex{}
		s.locks[k] = l
	}
	return l
}

// Scheduler wake-ups: at least every maxWake (to notice new tables and
// changed options), at most every minWake.
const (
	maxWake = time.Second
	minWake = 20 * time.Millisecond
	// forgetAfter: the scheduler forgets a table it has not listed for this
	// long (not sooner: a failed listing must not make a table look new).
	forgetAfter = time.Hour
)

// Freshness returns how often t is tiered: its lakestream.freshness option,
// else Options.Interval (also when the option does not parse).
func (s *Service) Freshness(t *lake.Table) time.Duration {
	d, _ := lakestream.Freshness(t, s.opts.Interval)
	return d
}

// Run tiers every enabled table at its own freshness interval, and applies
// the log retention, until ctx ends. Tables are tiered one after the other.
func (s *Service) Run(ctx context.Context) {
	clock := s.opts.Clock
	defer s.dropAllStaged()
	var lastCollect time.Time
	lastOrphans := clock.Now() // the first sweep waits a full period
	wait := time.Duration(0)   // the first pass tiers at once what the log holds
	for {
		select {
		case <-ctx.Done():
			return
		case <-clock.After(wait):
		}
		now := clock.Now()
		next := s.runDue(ctx, now)
		if now.Sub(lastCollect) >= s.opts.CollectEvery {
			s.collectAll(ctx, now)
			lastCollect = now
		}
		if now.Sub(lastOrphans) >= s.opts.OrphansEvery {
			s.dropAllStaged() // their files are ones no snapshot references
			s.removeOrphans(ctx, now)
			lastOrphans = now
		}
		wait = min(max(next.Sub(clock.Now()), minWake), maxWake)
	}
}

// forEachTable calls fn for every lake-stream enabled table this node owns
// (see Options.Owns).
func (s *Service) forEachTable(ctx context.Context, fn func(db, name string, t *lake.Table)) {
	dbs, err := s.ls.Databases(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.lg.Warn("tiering: list databases", "err", err)
		}
		return
	}
	for _, db := range dbs {
		tables, err := s.ls.Tables(ctx, db)
		if err != nil {
			continue
		}
		for _, name := range tables {
			if ctx.Err() != nil {
				return
			}
			t, err := s.ls.Table(ctx, db, name)
			if err != nil || !lakestream.Realtime(t) {
				continue
			}
			if s.opts.Owns != nil {
				id := lakestream.TableID(t)
				if !s.opts.Owns(id) {
					s.dropStaged(db, name) // another node tiers it now
					s.markNotOwned(id, true)
					continue
				}
				s.markNotOwned(id, false)
			}
			fn(db, name, t)
		}
	}
}

// runDue runs a round for every table whose freshness interval has passed
// since its last round and returns when the next round is due.
// The first pass tiers every table (what the log held at startup); a table
// seen for the first time later (created, or its log switched on) gets its
// first round one interval after that. A capped round (Result.More) makes
// its table due again at once; a failed one backs off (see failed).
func (s *Service) runDue(ctx context.Context, now time.Time) time.Time {
	first := s.passes == 0
	s.passes++
	next := now.Add(maxWake)
	s.forEachTable(ctx, func(db, name string, t *lake.Table) {
		id := lakestream.TableID(t)
		sc := s.sched[id]
		if sc == nil {
			sc = &schedule{}
			if !first {
				sc.last = now
			}
			s.sched[id] = sc
		}
		if s.takeOver(id) {
			// Taken over from another node (it left or died): what
			// waited in the log while ownership moved is due now.
			sc.last, sc.failures = time.Time{}, 0
		}
		sc.seen = now
		var end int64
		for _, hw := range s.ls.Log().HighWatermarks(id) {
			end += hw
		}
		burst := sc.bursting(now, end, s.burstRate())
		every, err := lakestream.Freshness(t, s.opts.Interval)
		if opt := t.Schema().Options[lakestream.OptionFreshness]; err != nil && sc.badOpt != opt {
			sc.badOpt = opt
			s.lg.Warn("tiering: ignoring the table's freshness option", "table", db+"."+name, "default", s.opts.Interval, "err", err)
		}
		if !now.Before(sc.dueAt(now, every)) {
			res, err := s.TierTable(ctx, db, name)
			switch {
			case err != nil && ctx.Err() != nil: // stopping
			case err != nil:
				s.failed(sc, id, db+"."+name, now, every, err)
			default:
				s.succeeded(sc, db+"."+name, now, res.More)
			}
		} else if sc.failures > 0 {
			s.dropStaged(db, name) // its next round starts over from the log
		} else if !burst {
			s.stage(ctx, db, name)
		} else if !t.Schema().HasPrimaryKey() {
			s.lg.Debug("tiering: not staging during a burst", "table", db+"."+name, "log_rows", end)
		}
		if at := sc.dueAt(now, every); at.Before(next) {
			next = at
		}
	})
	for id, sc := range s.sched {
		if now.Sub(sc.seen) > forgetAfter {
			delete(s.sched, id) // dropped, or its log switched off
			s.forgetHealth(id)
		}
	}
	return next
}

// markNotOwned records whether another node owns the table (id); a table
// that turns owned is taken over (see takeOver).
func (s *Service) markNotOwned(id string, other bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.notOwned == nil {
		s.notOwned = map[string]bool{}
	}
	if other {
		s.notOwned[id] = true
	} else if s.notOwned[id] {
		s.notOwned[id] = false // taken over; takeOver clears it
	}
}

// takeOver reports once that this node took the table over from another.
func (s *Service) takeOver(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.notOwned[id]
	if ok && !v {
		delete(s.notOwned, id)
		return true
	}
	return false
}
