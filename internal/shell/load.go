package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/arrowconv"
	"github.com/flightd/flightd/internal/loadfmt"
)

// LoadOptions configure Load.
type LoadOptions struct {
	// Format is every file's format; "" chooses by each file's extension.
	Format loadfmt.Format
	// Create makes the table from the first file's columns when it does
	// not exist: with PrimaryKey a primary-key table of Buckets buckets
	// (0: the server's default), else an append table.
	Create     bool
	PrimaryKey []string
	Buckets    int
	// Delimiter and Null: see loadfmt.Options.
	Delimiter byte
	Null      string
	// BatchRows bounds a batch's rows (default loadfmt.DefaultBatchRows).
	BatchRows int
	// StreamRows bounds the rows of one ingest stream, the unit the
	// server acknowledges (default DefaultStreamRows); a file starts a
	// stream of its own.
	StreamRows int64
	// Progress receives a progress line when ProgressLine is set (a
	// terminal), what was created, and the final count in any case.
	Progress     io.Writer
	ProgressLine bool
	// Stop, once closed, ends the load after the batch being sent (the
	// first Ctrl-C): the stream is closed as usual, so its rows are
	// acknowledged and counted. Cancelling ctx breaks the stream off.
	Stop <-chan struct{}
}

// DefaultStreamRows is LoadOptions.StreamRows by default: 16 batches of
// the default size. Each stream ends in a wait for its last batch to be
// durable, while the client waits for the answer: about 10 ms (a stream
// per 64Ki-row batch loaded 13-15% slower than one for 1Mi rows, four of
// 256Ki rows as fast). Bounding a stream bounds what a broken connection
// leaves unsure.
const DefaultStreamRows = 16 * loadfmt.DefaultBatchRows

// LoadResult is what a load did.
type LoadResult struct {
	Rows    int64 // acknowledged by the server
	Files   int
	Bytes   int64 // of the files
	Elapsed time.Duration
	Created bool
}

// ErrInterrupted ends a load stopped by LoadOptions.Stop.
var ErrInterrupted = errors.New("interrupted")

// LoadError is a load that stopped before the end: why, and what the
// server had acknowledged, which stays in the table.
type LoadError struct {
	Table string // db.table
	// Err is the cause: a bad row (a *loadfmt.RowError), a file that
	// cannot be read, the server's refusal, ErrInterrupted.
	Err error
	// Acked rows were acknowledged by the server: they are in the table.
	Acked int64
	// Next is the first row not acknowledged, when it is known: every
	// row before it, in the order of the files, is in the table and none
	// after it was sent. nil when Unsure or when the rows line up with
	// no position (the server counted part of a batch).
	Next *loadfmt.Pos
	// Unsure rows were sent in a stream that broke off before the server
	// acknowledged it: any of them may have been written. From is the
	// first of them.
	Unsure int64
	From   *loadfmt.Pos
}

func (e *LoadError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "load into %s stopped: %v\n", e.Table, e.Err)
	switch {
	case e.Acked == 0 && e.Unsure == 0:
		fmt.Fprintf(&b, "no row was written to %s", e.Table)
	case e.Next != nil:
		fmt.Fprintf(&b, "%d row%s acknowledged by the server stay in %s: every row before %s", e.Acked, plural(e.Acked), e.Table, posText(*e.Next))
	default:
		fmt.Fprintf(&b, "%d row%s acknowledged by the server stay in %s", e.Acked, plural(e.Acked), e.Table)
	}
	if e.Unsure > 0 {
		fmt.Fprintf(&b, "; %d more row%s, sent in a stream that broke off before the server acknowledged it", e.Unsure, plural(e.Unsure))
		if e.From != nil {
			fmt.Fprintf(&b, " (from %s on)", posText(*e.From))
		}
		b.WriteString(", may have been written too")
	}
	return b.String()
}

func (e *LoadError) Unwrap() error { return e.Err }

// posText names a position as "every row before ..." ends: a file's first
// row is the file.
func posText(p loadfmt.Pos) string {
	if p.Row == 0 {
		return p.File
	}
	return p.String()
}

// Load loads files (paths, directories, glob patterns; see
// loadfmt.Files) into table (db.table, or a table of the database
// "default"), batch by batch through the server's bulk ingest, in the
// order of the files. A file goes in one stream or more of at most
// StreamRows rows each, one after another, so rows reach the table in
// order (a later row replaces an earlier one of the same key).
//
// The first bad row stops the load: the rows before it are sent and
// acknowledged, none after it. The error is then a *LoadError, which says
// what the server acknowledged.
func Load(ctx context.Context, c *Client, table string, args []string, o LoadOptions) (res LoadResult, err error) {
	if o.BatchRows <= 0 {
		o.BatchRows = loadfmt.DefaultBatchRows
	}
	if o.StreamRows <= 0 {
		o.StreamRows = DefaultStreamRows
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if !o.Create && (len(o.PrimaryKey) > 0 || o.Buckets > 0) {
		return res, errors.New("--primary-key and --bucket say how --create makes the table: give --create too")
	}
	if o.Buckets > 0 && len(o.PrimaryKey) == 0 {
		return res, errors.New("--bucket is for primary-key tables: give --primary-key too")
	}
	parts, err := splitName(table)
	if err != nil {
		return res, err
	}
	var db, name string
	switch len(parts) {
	case 1:
		db, name = "default", parts[0]
	case 2:
		db, name = parts[0], parts[1]
	default:
		return res, fmt.Errorf("%q: expected a table or database.table", table)
	}
	qualified := quoteIdent(db) + "." + quoteIdent(name)
	files, err := loadfmt.Files(args, o.Format)
	if err != nil {
		return res, err
	}
	if len(files) == 0 {
		return res, errors.New("no file to load")
	}
	start := time.Now()
	schema, err := c.tableSchema(ctx, db, name)
	if err != nil {
		return res, err
	}
	switch {
	case schema == nil && !o.Create:
		return res, fmt.Errorf("table %s does not exist: create it first (CREATE TABLE), or give --create to make it from the first file's columns", qualified)
	case schema == nil:
		if err := createTable(ctx, c, db, name, files[0], o); err != nil {
			return res, err
		}
		res.Created = true
		if schema, err = c.tableSchema(ctx, db, name); err != nil {
			return res, err
		}
		if schema == nil {
			return res, fmt.Errorf("table %s was created but is not found", qualified)
		}
	case o.Create && (len(o.PrimaryKey) > 0 || o.Buckets > 0):
		fmt.Fprintf(o.Progress, "table %s exists: loading into it as it is (--primary-key and --bucket are for a table --create makes)\n", qualified)
	}
	l := &loader{c: c, db: db, table: name, qualified: qualified, schema: schema, o: o, start: start,
		m: meter{w: o.Progress, on: o.ProgressLine, start: start}}
	for _, f := range files {
		if f.Size > 0 {
			l.total += f.Size
		} else if f.Size < 0 {
			l.total = -1 // standard input: no total
		}
		if l.total < 0 {
			break
		}
	}
	for i, f := range files {
		complete, err := l.file(ctx, f)
		if complete {
			l.files++
			if f.Size >= 0 {
				l.bytes += f.Size
			} else {
				l.bytes += l.read // standard input: what was read
			}
		}
		if err != nil {
			var le *LoadError
			if errors.As(err, &le) && complete && le.Next == nil && i+1 < len(files) {
				le.Next = &loadfmt.Pos{File: files[i+1].Path} // stopped between files
			}
			l.m.clear()
			return l.result(res), err
		}
	}
	l.m.clear()
	res = l.result(res)
	fmt.Fprintf(o.Progress, "loaded %d row%s from %d file%s (%s) into %s in %.1f s (%s rows/s, %s/s)\n",
		res.Rows, plural(res.Rows), res.Files, plural(int64(res.Files)), size(res.Bytes), qualified,
		res.Elapsed.Seconds(), count(rate(res.Rows, res.Elapsed)), size(rate(res.Bytes, res.Elapsed)))
	return res, nil
}

// loader is one load's state.
type loader struct {
	c           *Client
	db, table   string
	qualified   string
	schema      *arrow.Schema
	o           LoadOptions
	start       time.Time
	m           meter
	total       int64 // bytes of the files; -1 when unknown
	bytes       int64 // of the files done
	files       int
	acked       int64 // rows the server acknowledged
	sent        int64 // rows sent (the progress line counts these)
	read        int64 // bytes of the file being loaded read so far
	interrupted bool
}

func (l *loader) result(res LoadResult) LoadResult {
	res.Rows, res.Files, res.Bytes, res.Elapsed = l.acked, l.files, l.bytes, time.Since(l.start)
	return res
}

func (l *loader) stopErr(err error, next *loadfmt.Pos) *LoadError {
	return &LoadError{Table: l.qualified, Err: err, Acked: l.acked, Next: next}
}

// batch is a batch read ahead, retained: where its rows start, and how
// much of the file had been read once it was.
type batch struct {
	rec  arrow.RecordBatch
	pos  loadfmt.Pos
	read int64
}

// readAhead is how many batches the reader may run ahead of the sender,
// so that reading (parsing text, decoding Parquet) and sending overlap.
const readAhead = 4

// sentBatch is a batch handed to a stream: where it starts, its rows.
type sentBatch struct {
	pos  loadfmt.Pos
	rows int64
}

// file loads one file. complete reports, with an error, that every row
// of the file was sent (the load was stopped after its last batch).
func (l *loader) file(ctx context.Context, f loadfmt.File) (complete bool, err error) {
	l.read = 0
	r, err := loadfmt.Open(ctx, f, loadfmt.Options{Table: l.schema, BatchRows: l.o.BatchRows,
		Delimiter: l.o.Delimiter, Null: l.o.Null})
	if err != nil {
		return false, l.stopErr(err, &loadfmt.Pos{File: f.Path})
	}
	// A goroutine reads ahead. It retains each batch before handing it
	// over and releases what it holds when the read is abandoned; this
	// side releases each batch once sent and drains the channel on every
	// return, then closes the reader. Standard input may block the reader
	// for good (a producer that writes no more): then the drain goes on
	// in the background.
	rctx, cancel := context.WithCancel(ctx)
	batches := make(chan batch, readAhead)
	var readErr error // set before batches closes
	go func() {
		defer close(batches)
		for r.Next() {
			rec, pos := r.Batch()
			rec.Retain()
			select {
			case batches <- batch{rec, pos, r.Read()}:
			case <-rctx.Done():
				rec.Release()
				return
			}
		}
		readErr = r.Err()
	}()
	defer func() {
		cancel()
		drain := func() {
			for b := range batches {
				b.rec.Release()
			}
			r.Close()
		}
		if f.Path == loadfmt.Stdin {
			go drain()
		} else {
			drain()
		}
	}()
	stopped := func() bool {
		select {
		case <-l.o.Stop:
			l.interrupted = true
			return true
		default:
			return false
		}
	}
	// take is the next batch; false at the end of the read, or when the
	// load is stopped.
	take := func() (batch, bool) {
		if stopped() {
			return batch{}, false
		}
		select {
		case b, ok := <-batches:
			return b, ok
		case <-l.o.Stop:
			l.interrupted = true
			return batch{}, false
		}
	}
	for !l.interrupted {
		head, ok := take()
		if !ok {
			break
		}
		// One stream: head and the batches after it, up to StreamRows rows.
		var (
			sent   []sentBatch
			rows   int64
			prev   arrow.RecordBatch // written: released when the next is asked for
			ended  bool
			queued = &head
		)
		next := func() (arrow.RecordBatch, bool) {
			if prev != nil {
				prev.Release()
				prev = nil
			}
			if queued == nil {
				if ended || rows >= l.o.StreamRows {
					return nil, false
				}
				b, ok := take()
				if !ok {
					ended = true
					return nil, false
				}
				queued = &b
			}
			b := *queued
			queued = nil
			sent = append(sent, sentBatch{b.pos, b.rec.NumRows()})
			rows += b.rec.NumRows()
			l.sent += b.rec.NumRows()
			l.read = b.read
			l.progress()
			prev = b.rec
			return b.rec, true
		}
		acked, known, err := l.c.ingest(ctx, l.db, l.table, r.Schema(), next)
		if prev != nil {
			prev.Release()
		}
		if queued != nil { // never handed to the stream
			queued.rec.Release()
		}
		l.acked += acked
		// at is the position of the stream's row n, if a batch starts there.
		at := func(n int64) *loadfmt.Pos {
			var k int64
			for _, b := range sent {
				if k == n {
					pos := b.pos
					return &pos
				}
				k += b.rows
			}
			return nil
		}
		switch {
		case !known:
			e := l.stopErr(err, nil)
			e.Unsure, e.From = rows, at(0)
			return false, e
		case err != nil:
			return false, l.stopErr(fmt.Errorf("the server refused a batch: %w", err), at(acked))
		case acked != rows:
			return false, l.stopErr(fmt.Errorf("the server acknowledged %d of the %d rows sent in a stream", acked, rows), nil)
		}
	}
	if l.interrupted {
		// Where the rows not sent begin: the next batch, if the reader
		// has one.
		e := l.stopErr(ErrInterrupted, nil)
		select {
		case b, ok := <-batches:
			if ok {
				e.Next = &b.pos
				b.rec.Release()
				return false, e
			}
			return readErr == nil, e
		case <-time.After(time.Second):
			return false, e
		}
	}
	if readErr != nil {
		var re *loadfmt.RowError
		if errors.As(readErr, &re) {
			return false, l.stopErr(readErr, &re.Pos)
		}
		return false, l.stopErr(readErr, nil)
	}
	return true, nil
}

// progress redraws the progress line: rows sent, bytes of the files
// read (read of the file being loaded), the rate and the time left.
func (l *loader) progress() {
	if !l.m.on {
		return
	}
	d := time.Since(l.start)
	done := l.bytes + l.read
	if l.total < 0 {
		l.m.draw("%s rows, %s read, %s/s", count(l.sent), size(done), size(rate(done, d)))
		return
	}
	pct := 0
	if l.total > 0 {
		pct = int(100 * done / l.total)
	}
	left := eta(done, l.total, d)
	if left != "" {
		left = ", " + left + " left"
	}
	l.m.draw("%s rows, %s of %s (%d%%), %s/s%s", count(l.sent), size(done), size(l.total), pct, size(rate(done, d)), left)
}

// tableSchema is the Arrow schema of db.table, or nil when there is no
// such table. Field metadata (Flight SQL's column descriptions) is left
// out.
func (c *Client) tableSchema(ctx context.Context, db, table string) (*arrow.Schema, error) {
	dbp, tp := likeEscape(db), likeEscape(table)
	recs, err := c.getTables(ctx, &dbp, &tp, true)
	if err != nil {
		return nil, err
	}
	defer release(recs)
	for _, rec := range recs {
		dbs, ok1 := column(rec, "db_schema_name").(*array.String)
		names, ok2 := column(rec, "table_name").(*array.String)
		schemas, ok3 := column(rec, "table_schema").(*array.Binary)
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("GetTables: unexpected schema %s", rec.Schema())
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			if dbs.Value(i) != db || names.Value(i) != table {
				continue
			}
			sc, err := flight.DeserializeSchema(schemas.Value(i), memory.DefaultAllocator)
			if err != nil {
				return nil, fmt.Errorf("schema of %s.%s: %w", db, table, err)
			}
			fields := make([]arrow.Field, sc.NumFields())
			for j, f := range sc.Fields() {
				fields[j] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable}
			}
			return arrow.NewSchema(fields, nil), nil
		}
	}
	return nil, nil
}

// createTable creates db.table from the columns of file f (their types
// inferred for CSV and JSON).
func createTable(ctx context.Context, c *Client, db, table string, f loadfmt.File, o LoadOptions) error {
	r, err := loadfmt.Open(ctx, f, loadfmt.Options{BatchRows: o.BatchRows, Delimiter: o.Delimiter, Null: o.Null})
	if err != nil {
		return fmt.Errorf("--create: %w", err)
	}
	sc := r.Schema()
	r.Close()
	sql, cols, err := createStatement(db, table, sc, o.PrimaryKey, o.Buckets)
	if err != nil {
		return fmt.Errorf("--create from %s: %w", f.Path, err)
	}
	if _, err := c.Query(ctx, sql, func(*arrow.Schema) (Sink, error) {
		return sinkFunc(func(arrow.RecordBatch) error { return nil }), nil
	}); err != nil {
		return fmt.Errorf("--create: %w", err)
	}
	key := "no primary key (an append table)"
	if len(o.PrimaryKey) > 0 {
		key = "primary key (" + strings.Join(o.PrimaryKey, ", ") + ")"
		if o.Buckets > 0 {
			key += fmt.Sprintf(", %d buckets", o.Buckets)
		}
	}
	fmt.Fprintf(o.Progress, "created table %s.%s from %s: %s; %s\n", quoteIdent(db), quoteIdent(table), f.Path, cols, key)
	return nil
}

// createStatement is the CREATE TABLE of a table of sc's columns, and
// the columns as it declares them. Primary-key columns are named as the
// file names them (matched ignoring case).
func createStatement(db, table string, sc *arrow.Schema, pk []string, buckets int) (sql, cols string, err error) {
	var defs, shown []string
	for _, f := range sc.Fields() {
		t, err := arrowconv.PaimonType(f.Type)
		if err != nil {
			return "", "", fmt.Errorf("column %q: %w", f.Name, err)
		}
		if !f.Nullable {
			t += " NOT NULL"
		}
		defs = append(defs, quoteIdent(f.Name)+" "+t)
		shown = append(shown, quoteIdent(f.Name)+" "+t)
	}
	for i, k := range pk {
		j := -1
		for n, f := range sc.Fields() {
			if f.Name == k || (j < 0 && strings.EqualFold(f.Name, k)) {
				j = n
			}
		}
		if j < 0 {
			return "", "", fmt.Errorf("--primary-key %s: no such column (the columns: %s)", k, strings.Join(fieldNames(sc), ", "))
		}
		pk[i] = sc.Field(j).Name
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s.%s (%s", quoteIdent(db), quoteIdent(table), strings.Join(defs, ", "))
	if len(pk) > 0 {
		q := make([]string, len(pk))
		for i, k := range pk {
			q[i] = quoteIdent(k)
		}
		fmt.Fprintf(&b, ", PRIMARY KEY (%s) NOT ENFORCED", strings.Join(q, ", "))
	}
	b.WriteString(")")
	if buckets > 0 {
		fmt.Fprintf(&b, " WITH ('bucket' = '%d')", buckets)
	}
	return b.String(), strings.Join(shown, ", "), nil
}

func fieldNames(sc *arrow.Schema) []string {
	out := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		out[i] = f.Name
	}
	return out
}
