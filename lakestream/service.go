package lakestream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"

	"github.com/flightd/flightd/internal/bufpool"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/logstore"
)

// Table options that lakestream owns.
const (
	OptionEnabled = "lakestream.enabled"
	OptionTableID = "lakestream.table-id"
	// OptionFreshness is the per-table tiering interval (see ParseFreshness);
	// the server default applies when it is absent.
	OptionFreshness = "lakestream.freshness"
)

// RealtimeSuffix names the real-time view of a table: t$rt.
const RealtimeSuffix = "$rt"

// ReadOptimizedSuffix names Paimon's read-optimized view of a table, t$ro:
// a primary-key table's fully compacted files only (ScanOptions.ReadOptimized).
const ReadOptimizedSuffix = "$ro"

// ViewSuffix returns the suffix of a table's read-only view that name ends
// in, in any case (RealtimeSuffix or ChangelogSuffix), or "" for a table's
// own name.
func ViewSuffix(name string) string {
	lower := strings.ToLower(name)
	for _, s := range []string{RealtimeSuffix, ChangelogSuffix, ReadOptimizedSuffix} {
		if strings.HasSuffix(lower, s) {
			return s
		}
	}
	return ""
}

// DefaultPrimaryKeyBuckets is the bucket count given to a primary-key table
// created without a 'bucket' option. Paimon's own default (-1, dynamic
// buckets) needs a hash index that flightd does not maintain yet.
const DefaultPrimaryKeyBuckets = 4

var (
	// ErrNotRealtime is returned for t$rt of a table whose log is disabled.
	ErrNotRealtime = errors.New("lakestream: table is not lake-stream enabled")
	// ErrInvalidBatch marks a write whose batch does not fit the table.
	ErrInvalidBatch = errors.New("lakestream: batch does not match table")
	// ErrInvalidOption marks a table option value that flightd cannot use. It is
	// lake.ErrInvalidOption, which the catalog returns for options naming paths
	// (see lake.CheckPathOptions).
	ErrInvalidOption = lake.ErrInvalidOption
	// ErrSchemaMismatch marks log rows that cannot be read under the table's
	// schema (a value that does not fit a changed type, a schema file gone).
	ErrSchemaMismatch = errors.New("lakestream: log rows do not fit the table's schema")
	// ErrSchemaChanged is returned by a scan that expected another schema
	// (ScanOptions.Expect): the table's schema changed while the statement
	// was planned, so it is to be run again.
	ErrSchemaChanged = errors.New("lakestream: table schema changed during the statement; run it again")
)

// Options configure a Service.
type Options struct {
	Logger *slog.Logger
	// Allocator for decoded rows (log entries and lake scans); nil is Go's
	// for the log, and for lake scans a pool of the large buffers their
	// batches free (bufpool: a scan decodes every row group into new
	// buffers; the log's entries live longer, and pooling them held 60-90
	// MiB more at the peak of tiering a 10M-row burst).
	Allocator memory.Allocator
	// LogCacheBytes bounds the decoded un-tiered log kept in memory
	// (default DefaultLogCacheBytes; negative: no cache).
	LogCacheBytes int64
	// OtherNodes says that other flightd nodes serve the warehouse and run
	// DDL on it (a cluster): reads then check a table's schema at every statement, as
	// writes do (one round trip on S3), so DDL on one node is used by the
	// next statement on any other. Alone, a node knows its own DDL, and
	// reads take another engine's within the catalog's refresh bound (see
	// readTable).
	OtherNodes bool
}

// Service is safe for concurrent use.
type Service struct {
	cat         *lake.Catalog
	log         logstore.Log
	mem         memory.Allocator
	scanMem     memory.Allocator // lake scans' batches (bufpool by default)
	lg          *slog.Logger
	mu          sync.Mutex
	meta        map[string]*tableMeta    // key db + "\x00" + table
	gates       map[string]*sync.RWMutex // see gate
	directLocks map[string]*sync.Mutex   // by table id, see writeDirect
	cache       *logCache
	pins        pins
	rounds      roundStatuses // see SetRoundStatus
	// forgotten counts forget calls: table does not cache metadata it read
	// while a table was dropped, renamed or altered (see table).
	forgotten  uint64
	dropGuard  atomic.Pointer[DropGuard]
	otherNodes bool // Options.OtherNodes
}

// DropGuard is called by DropTable before the table's files are removed,
// and by RenameTable before its directory moves; the table's background
// writer (tiering) stops writing into it and returns a function that they
// call when the table is gone from that name.
type DropGuard func(db, name string) (release func())

// SetDropGuard installs g (tiering.New does).
func (s *Service) SetDropGuard(g DropGuard) { s.dropGuard.Store(&g) }

// tableMeta caches what every write and read of a table needs, for one
// schema of the table.
type tableMeta struct {
	// logChecked: the log was found not behind the lake (checkLogOnce).
	logChecked atomic.Bool
	table      *lake.Table
	ts         *paimontype.TableSchema // table.Schema()
	id         string
	schema     *arrow.Schema
	pk         []int // the primary-key columns
	// key is what versions of a row merge on: the primary key plus the
	// partition columns it does not include. Paimon's files key on the
	// primary key minus the partition fields, within a partition, so a key
	// that excludes a partition column is a key per partition (Java Paimon
	// reads (1, day1) and (1, day2) as two rows); the log merges alike.
	key []int
	// seq orders a primary-key table's versions by its sequence fields
	// (nil: by arrival; always nil for an append table); seqErr says why
	// the table's sequence options cannot be honoured.
	seq    *lake.SeqOrder
	seqErr error

	mu      sync.Mutex
	schemas map[int64]*paimontype.TableSchema // older schemas that log entries were written under
}

// New returns a Service over an open catalog and log.
func New(cat *lake.Catalog, log logstore.Log, opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	scanMem := opts.Allocator
	if opts.Allocator == nil {
		opts.Allocator, scanMem = memory.DefaultAllocator, bufpool.New()
	}
	if opts.LogCacheBytes == 0 {
		opts.LogCacheBytes = DefaultLogCacheBytes
	}
	return &Service{cat: cat, log: log, mem: opts.Allocator, scanMem: scanMem, lg: opts.Logger, meta: map[string]*tableMeta{},
		gates: map[string]*sync.RWMutex{}, directLocks: map[string]*sync.Mutex{}, cache: newLogCache(max(opts.LogCacheBytes, 0)),
		otherNodes: opts.OtherNodes}
}

// Catalog returns the lake catalog.
func (s *Service) Catalog() *lake.Catalog { return s.cat }

// Log returns the log store.
func (s *Service) Log() logstore.Log { return s.log }

// CreateDatabase creates a database (a Paimon <db>.db directory).
func (s *Service) CreateDatabase(ctx context.Context, name string, ifNotExists bool) error {
	return s.cat.CreateDatabase(ctx, name, ifNotExists)
}

// DropDatabase drops a database; with cascade its tables and their logs too.
func (s *Service) DropDatabase(ctx context.Context, name string, ifExists, cascade bool) error {
	if cascade {
		tables, err := s.cat.ListTables(ctx, name)
		if err == nil {
			for _, t := range tables {
				if err := s.DropTable(ctx, name, t, true); err != nil {
					return err
				}
			}
		}
	}
	return s.cat.DropDatabase(ctx, name, ifExists, cascade)
}

// Databases lists the databases.
func (s *Service) Databases(ctx context.Context) ([]string, error) { return s.cat.ListDatabases(ctx) }

// Tables lists the tables of a database (without the $rt names).
func (s *Service) Tables(ctx context.Context, db string) ([]string, error) {
	return s.cat.ListTables(ctx, db)
}

// CreateTable creates a lake-stream enabled Paimon table.
func (s *Service) CreateTable(ctx context.Context, db, name string, sc paimontype.Schema, ifNotExists bool) error {
	if suffix := ReservedSuffix(name); suffix != "" {
		return fmt.Errorf("%w: table name %q may not end in %q: that suffix names a table's read-only view", lake.ErrInvalidName, name, suffix)
	}
	opts := make(map[string]string, len(sc.Options)+3)
	for k, v := range sc.Options {
		opts[k] = v
	}
	if _, ok := opts[OptionEnabled]; !ok {
		opts[OptionEnabled] = "true"
	}
	opts[OptionTableID] = uuid.NewString()
	opts[OptionLog] = s.log.Describe().ID
	if v, ok := opts[OptionFreshness]; ok {
		if _, err := ParseFreshness(v); err != nil {
			return fmt.Errorf("lakestream: create %s.%s: %w", db, name, err)
		}
	}
	pk := sc.PrimaryKeys
	if v := opts["primary-key"]; len(pk) == 0 && v != "" {
		pk = splitNames(v) // the key given as Paimon's table option
	}
	if len(pk) > 0 {
		if _, ok := opts["bucket"]; !ok {
			opts["bucket"] = strconv.Itoa(DefaultPrimaryKeyBuckets)
		}
		if b, err := strconv.Atoi(opts["bucket"]); err != nil || b <= 0 {
			return fmt.Errorf("lakestream: primary-key table %s.%s needs a fixed bucket count ('bucket' = 'N', N > 0), got %q", db, name, opts["bucket"])
		}
	}
	if err := checkKeyHasPartitions(sc); err != nil {
		return fmt.Errorf("lakestream: create %s.%s: %w", db, name, err)
	}
	if err := lake.CheckSupported(opts, len(pk) > 0); err != nil {
		return fmt.Errorf("lakestream: create %s.%s: %w", db, name, err)
	}
	sc.Options = opts
	if err := lake.CheckSequenceField(sc); err != nil {
		return fmt.Errorf("lakestream: create %s.%s: %w", db, name, err)
	}
	_, err := s.cat.CreateTable(ctx, db, name, sc, ifNotExists)
	s.forget(db, name)
	return err
}

// checkKeyHasPartitions refuses a primary key that leaves out a partition
// column, as Java Paimon does for fixed buckets (SchemaValidation: such a
// key asks for cross-partition updates, which need dynamic buckets and a
// global index): Paimon would keep a key once per partition, not once per
// table as the key declares. Tables that have such a key anyway (made by
// another engine, or by an older flightd) are read per partition, like
// their files.
func checkKeyHasPartitions(sc paimontype.Schema) error {
	pk, parts := sc.PrimaryKeys, sc.PartitionKeys
	if v := sc.Options["primary-key"]; len(pk) == 0 && v != "" {
		pk = splitNames(v)
	}
	if v := sc.Options["partition"]; len(parts) == 0 && v != "" {
		parts = splitNames(v)
	}
	var missing []string
	for _, p := range parts {
		if !slices.Contains(pk, p) {
			missing = append(missing, p)
		}
	}
	if len(pk) == 0 || len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: primary key (%s) must include every partition column, and leaves out %s: "+
		"a fixed-bucket Paimon table keeps a key once per partition (Java Paimon refuses this layout; "+
		"keys unique across partitions need dynamic buckets, which flightd does not support); declare PRIMARY KEY (%s)",
		lake.ErrUnsupported, strings.Join(pk, ", "), strings.Join(missing, ", "), strings.Join(append(slices.Clone(pk), missing...), ", "))
}

func splitNames(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// DropTable drops the lake table and its log.
func (s *Service) DropTable(ctx context.Context, db, name string, ifExists bool) error {
	m, err := s.table(ctx, db, name)
	if err != nil {
		if ifExists && errors.Is(err, lake.ErrTableNotFound) {
			return nil
		}
		return err
	}
	if g := s.dropGuard.Load(); g != nil {
		// No round or staged write may create files while the directory
		// is removed ("directory not empty", or files left behind).
		defer (*g)(db, name)()
	}
	if err := s.cat.DropTable(ctx, db, name, ifExists); err != nil {
		return err
	}
	s.forget(db, name)
	s.cache.dropTable(m.id)
	s.SetRoundStatus(m.id, RoundStatus{})
	return s.log.DropTable(ctx, m.id)
}

// RenameTable renames db.name to toDB.to (lake.Catalog.RenameTable: the
// table directory moves). The log needs no change: it is named by the
// table's lakestream.table-id, which the schema carries along, so the rows
// not yet tiered read under the new name, in t$rt and in the next round.
// Writes in flight finish first (the write gate), and the table's tiering
// round or staged rows (the drop guard) finish or are dropped, so that no
// file is written into the old directory after it moved; both names'
// cached metadata is forgotten.
func (s *Service) RenameTable(ctx context.Context, db, name, toDB, to string) error {
	if suffix := ReservedSuffix(name); suffix != "" {
		return fmt.Errorf("%w: rename table %s.%s: the name ends in %q, which names a read-only view of table %s.%s; rename that table",
			lake.ErrInvalidName, db, name, suffix, db, name[:len(name)-len(suffix)])
	}
	if suffix := ReservedSuffix(to); suffix != "" {
		return fmt.Errorf("%w: rename table %s.%s to %s.%s: a table name may not end in %q: that suffix names a table's read-only view",
			lake.ErrInvalidName, db, name, toDB, to, suffix)
	}
	g := s.gate(db, name)
	g.Lock()
	defer g.Unlock()
	m, err := s.table(ctx, db, name)
	if err != nil {
		return err
	}
	if Realtime(m.table) && m.table.Schema().Options[OptionTableID] == "" {
		// Its log is named db.name (TableID): it would not follow.
		return fmt.Errorf("%w: rename table %s.%s: its log has no %s and is named after the table; switch the log off and on again first ('%s' = 'false', then 'true')",
			lake.ErrUnsupported, db, name, OptionTableID, OptionEnabled)
	}
	if guard := s.dropGuard.Load(); guard != nil {
		defer (*guard)(db, name)()
	}
	err = s.cat.RenameTable(ctx, db, name, toDB, to)
	s.forget(db, name)
	s.forget(toDB, to)
	return err
}

// AlterTableOptions sets table options.
func (s *Service) AlterTableOptions(ctx context.Context, db, name string, set map[string]string) error {
	for k, v := range set {
		if k == OptionFreshness {
			if _, err := ParseFreshness(v); err != nil {
				return fmt.Errorf("lakestream: alter %s.%s: %w", db, name, err)
			}
		}
		if k == OptionTableID || k == OptionLog {
			return fmt.Errorf("%w: lakestream: option %q is flightd's own and cannot be set or reset", lake.ErrInvalidOption, k)
		}
		if k == OptionEnabled {
			return fmt.Errorf("%w: lakestream: %q switches the log on or off: use SetRealtime", lake.ErrInvalidOption, k)
		}
	}
	_, err := s.cat.AlterTableOptions(ctx, db, name, set)
	s.forget(db, name)
	return err
}

// AddColumn adds a column to db.name (lake.Catalog.AddColumn). The log
// needs no change: its rows record the schema they were written under, and
// rows of an older schema read and tier under the new one by field id, the
// new column null.
func (s *Service) AddColumn(ctx context.Context, db, name string, add lake.AddColumn) error {
	_, err := s.cat.AddColumn(ctx, db, name, add)
	s.forget(db, name)
	return err
}

// RenameColumn renames a column of db.name (lake.Catalog.RenameColumn);
// the log's rows follow by field id.
func (s *Service) RenameColumn(ctx context.Context, db, name, from, to string) error {
	_, err := s.cat.RenameColumn(ctx, db, name, from, to)
	s.forget(db, name)
	return err
}

// DropColumn drops a column of db.name (lake.Catalog.DropColumn); the
// log's older rows lose it when read, by field id.
func (s *Service) DropColumn(ctx context.Context, db, name, col string) error {
	_, err := s.cat.DropColumn(ctx, db, name, col)
	s.forget(db, name)
	return err
}

// AlterColumn changes a column of db.name, or a field of a ROW, the
// elements of an ARRAY or the values of a MAP inside it (path: the names
// leading to it, "element" and "value" for what an ARRAY and a MAP hold;
// lake.Catalog.AlterColumn): a wider type, NOT NULL dropped, or its
// comment. The log's older rows are read and cast to the new type, nested
// fields by field id.
func (s *Service) AlterColumn(ctx context.Context, db, name string, path []string, ch lake.ColumnChange) error {
	_, err := s.cat.AlterColumn(ctx, db, name, path, ch)
	s.forget(db, name)
	return err
}

// Alter applies several schema changes to db.name as one schema
// (lake.Catalog.Alter): all of them, or none when one is refused.
func (s *Service) Alter(ctx context.Context, db, name string, changes ...lake.SchemaChange) error {
	_, err := s.cat.Alter(ctx, db, name, changes...)
	s.forget(db, name)
	return err
}

// ParseFreshness reads a lakestream.freshness value: a Go duration ("30s",
// "1m30s", "500ms") or a Paimon one, an integer and a unit with optional
// spaces between ("30 s", "1 min", "2 h", "1 day"; Paimon's unit names). It
// must be positive. A bare number is refused: Paimon would read it as
// milliseconds, which is rarely what a freshness means.
func ParseFreshness(v string) (time.Duration, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w: %s = %q: %s", ErrInvalidOption, OptionFreshness, v, why)
	}
	s := strings.TrimSpace(v)
	d, err := time.ParseDuration(s)
	if err != nil {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		unit, ok := paimonUnits[strings.ToLower(strings.TrimSpace(s[i:]))]
		n, nerr := strconv.ParseInt(s[:i], 10, 64)
		switch {
		case i == 0 || nerr != nil:
			return 0, bad("want a duration such as '30s', '30 s', '1 min' or '2 h'")
		case i == len(s):
			return 0, bad("give a unit, e.g. '" + s + "s' or '" + s + " s'")
		case !ok:
			return 0, bad("unknown unit " + strconv.Quote(strings.TrimSpace(s[i:])) + " (want ms, s, min, h or d)")
		case n > int64(1<<63-1)/int64(unit):
			return 0, bad("too long")
		}
		d = time.Duration(n) * unit
	}
	if d <= 0 {
		return 0, bad("must be positive")
	}
	return d, nil
}

// paimonUnits are the duration units Paimon (Flink's TimeUtils) accepts.
var paimonUnits = map[string]time.Duration{
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"min": time.Minute, "m": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"µs": time.Microsecond, "micro": time.Microsecond, "micros": time.Microsecond, "microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ns": time.Nanosecond, "nano": time.Nanosecond, "nanos": time.Nanosecond, "nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
}

// Freshness returns how often t is tiered: its lakestream.freshness option,
// else def. An option that does not parse (set by another engine, or before
// flightd checked it) gives def and the error.
func Freshness(t *lake.Table, def time.Duration) (time.Duration, error) {
	v := t.Schema().Options[OptionFreshness]
	if v == "" {
		return def, nil
	}
	d, err := ParseFreshness(v)
	if err != nil {
		return def, err
	}
	return d, nil
}

func metaKey(db, name string) string { return db + "\x00" + name }

func (s *Service) forget(db, name string) {
	s.mu.Lock()
	delete(s.meta, metaKey(db, name))
	s.forgotten++
	s.mu.Unlock()
}

// table returns the metadata of db.name: the cached one while it is still
// the table of that name at its latest schema. Every statement and tiering
// round asks, so what another process did to the table is used by the
// next one: a schema (and with it the options: the log switched on or off,
// a new lakestream.table-id) that another flightd node or Java Paimon
// committed, a DROP, a RENAME, a DROP and CREATE of the same name. The
// check is lake.Table.CheckSchema: a read of the cached schema's file and
// an existence test of the next, at once (one round trip on S3).
func (s *Service) table(ctx context.Context, db, name string) (*tableMeta, error) {
	return s.tableAt(ctx, db, name, false)
}

// readTable is table for reads: unless other nodes run DDL
// (Options.OtherNodes), the cached metadata is checked with
// lake.Table.CheckSchemaRecent, which on a warehouse in an object store
// answers from this node's DDL and a check made in the background less
// than two refresh intervals ago (lake.Catalog.RefreshEvery), with no
// request of its own. A read of a table another engine altered or dropped
// a moment ago reads it as it was; writes, DDL and tiering check with
// table, at once.
func (s *Service) readTable(ctx context.Context, db, name string) (*tableMeta, error) {
	return s.tableAt(ctx, db, name, !s.otherNodes)
}

// tableAt is table, with recent (readTable) checking with
// CheckSchemaRecent.
func (s *Service) tableAt(ctx context.Context, db, name string, recent bool) (*tableMeta, error) {
	k := metaKey(db, name)
	s.mu.Lock()
	m := s.meta[k]
	epoch := s.forgotten
	s.mu.Unlock()
	sameTable := false // m is of the table that is loaded next, at an older schema
	if m != nil {
		check := m.table.CheckSchema
		if recent {
			check = m.table.CheckSchemaRecent
		}
		state, err := check(ctx)
		if err != nil {
			return nil, err
		}
		if state == lake.SchemaCurrent {
			return m, nil
		}
		sameTable = state == lake.SchemaNewer
	}
	t, err := s.cat.GetTable(ctx, db, name)
	if err != nil {
		if m != nil && (errors.Is(err, lake.ErrTableNotFound) || errors.Is(err, lake.ErrDatabaseNotFound)) {
			s.drop(k, m) // dropped or renamed by another process
		}
		return nil, err
	}
	nm := newMeta(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.meta[k]; cur != nil && cur != m && cur.table.SameSchemaFile(t) {
		return cur, nil // another caller loaded the same meanwhile
	}
	if s.forgotten != epoch {
		// A table was dropped, renamed or altered while this one was read:
		// what was read may be of a name that is gone (a rename moves the
		// directory).
		return nm, nil
	}
	if m != nil {
		if sameTable && m.id == nm.id {
			nm.inherit(m)
			s.lg.Info("table schema changed", "table", db+"."+name, "from", m.ts.ID, "to", nm.ts.ID)
		} else {
			s.lg.Info("table replaced by another process", "table", db+"."+name, "id", m.id, "new_id", nm.id)
		}
		if !sameTable || m.id != nm.id {
			// A log no longer read under this name, or, for a table named
			// db.name (TableID) that was dropped and created again, a log
			// that starts over at offset 0: its cached entries are not the
			// new log's.
			s.cache.dropTable(m.id)
		}
	}
	s.meta[k] = nm
	return nm, nil
}

// planningKey is the context key of a statement's planning lookups (Planning).
type planningKey struct{}

// planned is the metadata a statement's planning found, by metaKey.
type planned struct {
	mu sync.Mutex
	m  map[string]*tableMeta
}

// Planning returns ctx under which a statement plans: the metadata lookups
// Table, ArrowSchema, ChangelogSchema, MetaSchema and TravelSchema check a
// table once (see table), and later lookups of it under ctx reuse what
// that check found, as a statement's planning asks for a table's metadata
// several times. Reads and writes (Scan, ScanWith, Cut, Changelog, Meta,
// Write, Stream, TravelCut, ...) check the table again even under ctx, so
// a statement whose table changed since it was planned is refused
// (ScanOptions.Expect), not run on the old plan.
func Planning(ctx context.Context) context.Context {
	return context.WithValue(ctx, planningKey{}, &planned{m: map[string]*tableMeta{}})
}

// lookup is table for the metadata lookups, which reuse what the
// statement's planning found (Planning).
func (s *Service) lookup(ctx context.Context, db, name string) (*tableMeta, error) {
	p, _ := ctx.Value(planningKey{}).(*planned)
	if p == nil {
		return s.table(ctx, db, name)
	}
	k := metaKey(db, name)
	p.mu.Lock()
	m := p.m[k]
	p.mu.Unlock()
	if m != nil {
		return m, nil
	}
	m, err := s.readTable(ctx, db, name)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.m[k] = m
	p.mu.Unlock()
	return m, nil
}

// drop forgets m, the cached metadata of key k, when it still is.
func (s *Service) drop(k string, m *tableMeta) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.meta[k] == m {
		delete(s.meta, k)
	}
}

func newMeta(t *lake.Table) *tableMeta {
	sc := t.Schema()
	m := &tableMeta{table: t, ts: sc, schema: sc.ArrowSchema(), schemas: map[int64]*paimontype.TableSchema{sc.ID: sc}}
	m.id = TableID(t)
	for _, k := range sc.PrimaryKeys {
		for i, f := range sc.Fields {
			if f.Name == k {
				m.pk = append(m.pk, i)
			}
		}
	}
	m.key = mergeKey(sc, m.pk)
	m.seq, m.seqErr = lake.SchemaSeqOrder(sc)
	if len(m.pk) == 0 {
		m.seq = nil
	}
	return m
}

// mergeKey returns the columns versions of a row merge on (see
// tableMeta.key): the partition columns the primary key leaves out, then
// the primary key; nil for an append table.
func mergeKey(sc *paimontype.TableSchema, pk []int) []int {
	if len(pk) == 0 {
		return nil
	}
	var key []int
	for _, p := range sc.PartitionKeys {
		if i := sc.FieldIndex(p); i >= 0 && !slices.Contains(pk, i) {
			key = append(key, i)
		}
	}
	if key == nil {
		return pk
	}
	return append(key, pk...)
}

// TableID is the name of a table's log: its lakestream.table-id option, or
// db.table for tables created by other engines.
func TableID(t *lake.Table) string {
	if id := t.Schema().Options[OptionTableID]; id != "" {
		return id
	}
	return t.Database() + "." + t.Name()
}

// TableOfLog returns the database, name and bucket count of the loaded
// table whose log is id ("", "", 0 when none is loaded): the Kafka log
// names a new table's topic and partitions with it.
func (s *Service) TableOfLog(id string) (database, name string, buckets int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.meta {
		if m.id == id {
			return m.table.Database(), m.table.Name(), m.ts.NumBuckets()
		}
	}
	return "", "", 0
}

// Realtime reports whether the table keeps a log (t$rt exists).
func Realtime(t *lake.Table) bool {
	return strings.EqualFold(t.Schema().Options[OptionEnabled], "true")
}

// Table returns the lake table db.name.
func (s *Service) Table(ctx context.Context, db, name string) (*lake.Table, error) {
	m, err := s.lookup(ctx, db, name)
	if err != nil {
		return nil, err
	}
	return m.table, nil
}

// ArrowSchema returns the Arrow schema of db.name (the same for t and t$rt).
func (s *Service) ArrowSchema(ctx context.Context, db, name string) (*arrow.Schema, error) {
	m, err := s.lookup(ctx, db, name)
	if err != nil {
		return nil, err
	}
	return m.schema, nil
}
