//go:build duckdb_arrow

package query

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/query/lakeerr"
	"github.com/flightd/flightd/sqlparse"
)

// procedure is one of Paimon's procedures: its arguments in positional
// order (the first is always the table), with the other names an
// argument is known by (Spark's snapshot for Flink's snapshot_id).
type procedure struct {
	args    []string
	aliases map[string]string
	// known are Paimon's arguments flightd does not take: refused by name.
	known []string
	run   func(e *Engine, ctx context.Context, db, table string, a procArgs) (int64, error)
}

var procedures = map[string]procedure{
	"create_tag": {args: []string{"table", "tag", "snapshot_id"}, aliases: map[string]string{"snapshot": "snapshot_id"},
		known: []string{"time_retained"}, run: (*Engine).createTag},
	"delete_tag": {args: []string{"table", "tag"}, run: (*Engine).deleteTag},
	"rollback_to": {args: []string{"table", "tag", "snapshot_id"}, aliases: map[string]string{"snapshot": "snapshot_id"},
		run: (*Engine).rollbackTo},
	"rollback": {args: []string{"table", "version"}, run: (*Engine).rollbackTo},
	"expire_snapshots": {args: []string{"table", "retain_max", "retain_min", "older_than", "max_deletes"},
		known: []string{"options"}, run: (*Engine).expireSnapshots},
	"compact": {args: []string{"table"},
		known: []string{"partitions", "order_strategy", "order_by", "options", "where", "partition_idle_time", "compact_strategy", "buckets"},
		run:   (*Engine).compact},
}

// procArgs are a CALL's arguments by name.
type procArgs map[string]sqlparse.CallArg

func (a procArgs) has(name string) bool { _, ok := a[name]; return ok }

// str is argument name as a string (a number's text is taken too, as
// Flink casts it).
func (a procArgs) str(name string) string { return a[name].Text }

// integer is argument name as a whole number; ok is false when it is not
// given.
func (a procArgs) integer(proc, name string, min int64) (n int64, ok bool, err error) {
	arg, ok := a[name]
	if !ok {
		return 0, false, nil
	}
	n, perr := strconv.ParseInt(arg.Text, 10, 64)
	if perr != nil || n < min {
		return 0, true, fmt.Errorf("%w: sys.%s: %s = %q: want a whole number of at least %d", engine.ErrInvalid, proc, name, arg.Text, min)
	}
	return n, true, nil
}

// callProcedure runs CALL sys.<name>(...) of Paimon's procedures; the
// count it returns is the statement's (the snapshots expired, ...).
func (e *Engine) callProcedure(ctx context.Context, c *sqlparse.Call) (int64, error) {
	name := strings.ToLower(c.Name.Table)
	p, ok := procedures[name]
	if !ok {
		return 0, fmt.Errorf("%w: CALL %s is not a procedure flightd has: it has sys.cancel(statement_id) and Paimon's %s", engine.ErrInvalid, c.Name, procedureNames())
	}
	a := procArgs{}
	for i, arg := range c.Args {
		n := strings.ToLower(arg.Name)
		if n == "" {
			if i >= len(p.args) {
				return 0, fmt.Errorf("%w: sys.%s takes at most %d arguments (%s)", engine.ErrInvalid, name, len(p.args), strings.Join(p.args, ", "))
			}
			n = p.args[i]
		}
		if to, ok := p.aliases[n]; ok {
			n = to
		}
		if !contains(p.args, n) {
			if contains(p.known, n) {
				return 0, fmt.Errorf("%w: sys.%s: argument %s is not supported by flightd (it takes %s)", engine.ErrUnsupported, name, n, strings.Join(p.args, ", "))
			}
			return 0, fmt.Errorf("%w: sys.%s has no argument %q (it takes %s)", engine.ErrInvalid, name, n, strings.Join(p.args, ", "))
		}
		if a.has(n) {
			return 0, fmt.Errorf("%w: sys.%s: argument %s given twice", engine.ErrInvalid, name, n)
		}
		a[n] = arg
	}
	ident := a.str("table")
	if ident == "" {
		return 0, fmt.Errorf("%w: sys.%s needs the table, as 'database.table'", engine.ErrInvalid, name)
	}
	db, table := engine.Database(ctx), ident
	if i := strings.IndexByte(ident, '.'); i >= 0 {
		db, table = ident[:i], ident[i+1:]
	}
	if db == "" || table == "" || strings.ContainsAny(table, ".$") {
		return 0, fmt.Errorf("%w: sys.%s: table %q: want 'database.table' (or 'table' in the session's database)", engine.ErrInvalid, name, ident)
	}
	n, err := p.run(e, ctx, db, table, a)
	if err != nil && errors.Is(err, fs.ErrNotExist) && !errors.Is(err, engine.ErrNotFound) {
		return 0, fmt.Errorf("%w: sys.%s: %w", engine.ErrNotFound, name, err)
	}
	if err != nil && !isEngineErr(err) {
		return 0, lakeerr.Map(err)
	}
	return n, err
}

func procedureNames() string {
	var names []string
	for n := range procedures {
		names = append(names, "sys."+n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// isEngineErr reports whether err already carries the engine's kind.
func isEngineErr(err error) bool {
	for _, k := range []error{engine.ErrInvalid, engine.ErrNotFound, engine.ErrUnsupported} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// createTag is sys.create_tag(table, tag[, snapshot_id]): a Paimon tag of
// the snapshot (the latest when none is given).
func (e *Engine) createTag(ctx context.Context, db, table string, a procArgs) (int64, error) {
	id, _, err := a.integer("create_tag", "snapshot_id", 1)
	if err != nil {
		return 0, err
	}
	if !a.has("tag") {
		return 0, fmt.Errorf("%w: sys.create_tag needs the tag's name", engine.ErrInvalid)
	}
	_, err = e.ls.CreateTag(ctx, db, table, a.str("tag"), id)
	return 0, err
}

// deleteTag is sys.delete_tag(table, tag): tag may list several names,
// separated by commas, as in Paimon. Every one must exist, else none is
// deleted.
func (e *Engine) deleteTag(ctx context.Context, db, table string, a procArgs) (int64, error) {
	if !a.has("tag") {
		return 0, fmt.Errorf("%w: sys.delete_tag needs the tag's name", engine.ErrInvalid)
	}
	t, err := e.ls.Table(ctx, db, table)
	if err != nil {
		return 0, err
	}
	names := strings.Split(a.str("tag"), ",")
	for i, n := range names {
		names[i] = strings.TrimSpace(n)
		if _, err := t.Tag(ctx, names[i]); err != nil {
			return 0, err
		}
	}
	for _, n := range names {
		if err := e.ls.DeleteTag(ctx, db, table, n); err != nil {
			return 0, err
		}
	}
	return int64(len(names)), nil
}

// rollbackTo is sys.rollback_to(table, tag | snapshot_id) (Flink: a
// positional number is a snapshot id, a string a tag) and Spark's
// sys.rollback(table, version) (a version of digits is a snapshot id,
// else a tag).
func (e *Engine) rollbackTo(ctx context.Context, db, table string, a procArgs) (int64, error) {
	var id int64
	tag := ""
	switch {
	case a.has("version"):
		v := a.str("version")
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 && !strings.HasPrefix(v, "+") {
			id = n
		} else {
			tag = v
		}
	case a.has("tag") && !a["tag"].String && a["tag"].Name == "":
		// Flink's rollback_to('db.t', 3): the snapshot
		n, _, err := a.integer("rollback_to", "tag", 1)
		if err != nil {
			return 0, err
		}
		id = n
	case a.has("tag") && a.has("snapshot_id"):
		return 0, fmt.Errorf("%w: sys.rollback_to takes a tag or a snapshot_id, not both", engine.ErrInvalid)
	case a.has("tag"):
		tag = a.str("tag")
	case a.has("snapshot_id"):
		n, _, err := a.integer("rollback_to", "snapshot_id", 1)
		if err != nil {
			return 0, err
		}
		id = n
	default:
		return 0, fmt.Errorf("%w: sys.rollback_to needs a tag or a snapshot_id", engine.ErrInvalid)
	}
	if tag == "" && id == 0 {
		return 0, fmt.Errorf("%w: sys.rollback_to needs a tag or a snapshot_id", engine.ErrInvalid)
	}
	_, cur, err := e.ls.RollbackTo(ctx, db, table, id, tag)
	return cur, err
}

// expireSnapshots is sys.expire_snapshots(table, retain_max, retain_min,
// older_than, max_deletes), each but the table optional and taken from the
// table's options when not given, as Paimon does
// (snapshot.num-retained.max, .min, snapshot.time-retained,
// snapshot.expire.limit). flightd still keeps what running reads and the
// log retention need. It returns the number of snapshots expired.
func (e *Engine) expireSnapshots(ctx context.Context, db, table string, a procArgs) (int64, error) {
	if e.maintenance == nil {
		return 0, fmt.Errorf("%w: this server runs no table maintenance", engine.ErrUnsupported)
	}
	t, err := e.ls.Table(ctx, db, table)
	if err != nil {
		return 0, err
	}
	opts := t.Schema().Options
	intOpt := func(arg, option string, def, min int64) (int64, error) {
		n, ok, err := a.integer("expire_snapshots", arg, min)
		if err != nil || ok {
			return n, err
		}
		if v, ok := opts[option]; ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n >= min {
				return n, nil
			}
		}
		return def, nil
	}
	retainMax, err := intOpt("retain_max", "snapshot.num-retained.max", math.MaxInt32, 1)
	if err != nil {
		return 0, err
	}
	retainMin, err := intOpt("retain_min", "snapshot.num-retained.min", 10, 1)
	if err != nil {
		return 0, err
	}
	maxDeletes, err := intOpt("max_deletes", "snapshot.expire.limit", 50, 1)
	if err != nil {
		return 0, err
	}
	if retainMax < retainMin {
		return 0, fmt.Errorf("%w: sys.expire_snapshots: retain_max %d is less than retain_min %d", engine.ErrInvalid, retainMax, retainMin)
	}
	now := time.Now()
	olderThan := time.Hour
	if v, ok := opts["snapshot.time-retained"]; ok {
		if d, err := lakestream.ParseFreshness(v); err == nil { // a Paimon duration
			olderThan = d
		}
	}
	if a.has("older_than") {
		ts, err := time.Parse("2006-01-02 15:04:05.999999999", strings.TrimSpace(a.str("older_than")))
		if err != nil {
			if ts, err = time.Parse("2006-01-02", strings.TrimSpace(a.str("older_than"))); err != nil {
				return 0, fmt.Errorf("%w: sys.expire_snapshots: older_than = %q: want a timestamp 'YYYY-MM-DD hh:mm:ss' (UTC)", engine.ErrInvalid, a.str("older_than"))
			}
		}
		olderThan = now.Sub(ts)
		if olderThan == 0 {
			olderThan = -time.Nanosecond // 0 is the default hour
		}
	}
	n, err := e.maintenance.ExpireTableWith(ctx, db, table, now, lake.ExpireOptions{
		RetainMax: int(retainMax), RetainMin: int(retainMin), MaxDeletes: int(maxDeletes), OlderThan: olderThan})
	return int64(n), err
}

// compact is sys.compact(table): a full compaction now.
func (e *Engine) compact(ctx context.Context, db, table string, _ procArgs) (int64, error) {
	if e.maintenance == nil {
		return 0, fmt.Errorf("%w: this server runs no table maintenance", engine.ErrUnsupported)
	}
	return e.maintenance.CompactTable(ctx, db, table)
}
