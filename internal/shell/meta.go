package shell

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/flightd/flightd/internal/resultfmt"
)

// help is \?'s text.
const help = `Statements end with ';' and may span lines. Backslash commands:
  \d              list the tables (t and t$rt of every database)
  \d NAME         describe a table: columns, types, primary key (db.t, "t$rt", ...)
  \timing [on|off]  print how long each statement took
  \format [NAME]  show or set the output format (table, csv, tsv, json, jsonl, markdown)
  \?              this help
  \q              quit (so does Ctrl-D)
Ctrl-C cancels the running statement, or clears the statement being typed.
Tab completes keywords and table names.
`

// isMeta reports whether line is a backslash command.
func isMeta(line string) bool {
	return strings.HasPrefix(strings.TrimSpace(line), `\`)
}

// meta runs a backslash command; quit is true for \q.
func (s *Shell) meta(ctx context.Context, line string) (quit bool, err error) {
	line = strings.TrimSpace(line)
	cmd, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch cmd {
	case `\q`, `\quit`:
		return true, nil
	case `\?`, `\h`, `\help`:
		fmt.Fprint(s.o.Out, help)
	case `\timing`:
		switch strings.ToLower(arg) {
		case "":
			s.o.Timing = !s.o.Timing
		case "on":
			s.o.Timing = true
		case "off":
			s.o.Timing = false
		default:
			return false, fmt.Errorf(`\timing: expected on or off, found %q`, arg)
		}
		fmt.Fprintf(s.o.Err, "Timing is %s.\n", map[bool]string{true: "on", false: "off"}[s.o.Timing])
	case `\format`:
		if arg == "" {
			fmt.Fprintf(s.o.Err, "Output format is %s.\n", s.o.Format)
			return false, nil
		}
		f, err := resultfmt.ParseFormat(arg)
		if err != nil {
			return false, fmt.Errorf(`\format: %w`, err)
		}
		if f.Binary() {
			return false, fmt.Errorf(`\format: %s is a file format: use flightd export, or flightd sql --format %s -o FILE`, f, f)
		}
		s.o.Format = f
	case `\d`, `\dt`:
		if arg == "" {
			return false, s.listTables(ctx)
		}
		return false, s.describe(ctx, arg)
	default:
		return false, fmt.Errorf(`unknown command %s; \? lists the commands`, cmd)
	}
	return false, nil
}

// metaFormat is the format a backslash command writes its table in:
// the shell's, unless that is a file format.
func (s *Shell) metaFormat() resultfmt.Format {
	if s.o.Format.Binary() {
		return resultfmt.Table
	}
	return s.o.Format
}

// listTables prints database, table and type of every table (GetTables).
func (s *Shell) listTables(ctx context.Context) error {
	recs, err := s.c.getTables(ctx, nil, nil, false)
	if err != nil {
		return err
	}
	defer release(recs)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "database", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "table", Type: arrow.BinaryTypes.String},
		{Name: "type", Type: arrow.BinaryTypes.String},
	}, nil)
	w, err := resultfmt.New(s.metaFormat(), s.o.Out, sc, resultfmt.Options{Width: s.width()})
	if err != nil {
		return err
	}
	for _, rec := range recs {
		cols := []arrow.Array{column(rec, "db_schema_name"), column(rec, "table_name"), column(rec, "table_type")}
		for _, c := range cols {
			if c == nil || c.DataType().ID() != arrow.STRING {
				return fmt.Errorf("GetTables: unexpected schema %s", rec.Schema())
			}
		}
		out := array.NewRecordBatch(sc, cols, rec.NumRows())
		err := w.Write(out)
		out.Release()
		if err != nil {
			return err
		}
	}
	return w.Close()
}

// describe prints the columns of the tables name matches: a db.table, or
// a table of the current database (of any, if the current one has none).
func (s *Shell) describe(ctx context.Context, name string) error {
	parts, err := splitName(name)
	if err != nil {
		return fmt.Errorf(`\d: %w`, err)
	}
	var db *string
	table := likeEscape(parts[len(parts)-1])
	switch len(parts) {
	case 1:
		cur := likeEscape(s.database())
		db = &cur
	case 2:
		d := likeEscape(parts[0])
		db = &d
	default:
		return fmt.Errorf(`\d: %q: expected a table or database.table`, name)
	}
	recs, err := s.c.getTables(ctx, db, &table, true)
	if err == nil && len(parts) == 1 && rowsOf(recs) == 0 {
		release(recs)
		recs, err = s.c.getTables(ctx, nil, &table, true)
	}
	if err != nil {
		return err
	}
	defer release(recs)
	if rowsOf(recs) == 0 {
		return fmt.Errorf(`\d: no table %s`, name)
	}
	for _, rec := range recs {
		dbs, ok1 := column(rec, "db_schema_name").(*array.String)
		names, ok2 := column(rec, "table_name").(*array.String)
		schemas, ok3 := column(rec, "table_schema").(*array.Binary)
		if !ok1 || !ok2 || !ok3 {
			return fmt.Errorf("GetTables: unexpected schema %s", rec.Schema())
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			sc, err := flight.DeserializeSchema(schemas.Value(i), memory.DefaultAllocator)
			if err != nil {
				return fmt.Errorf(`\d: schema of %s.%s: %w`, dbs.Value(i), names.Value(i), err)
			}
			keys, err := s.c.primaryKey(ctx, dbs.Value(i), names.Value(i))
			if err != nil {
				return err
			}
			fmt.Fprintf(s.o.Out, "Table %s.%s\n", quoteIdent(dbs.Value(i)), quoteIdent(names.Value(i)))
			if err := s.printColumns(sc, keys); err != nil {
				return err
			}
		}
	}
	return nil
}

// printColumns prints a table's columns: name, declared type, whether
// NULL is allowed, and the position in the primary key.
func (s *Shell) printColumns(sc *arrow.Schema, keys map[string]int32) error {
	out := arrow.NewSchema([]arrow.Field{
		{Name: "column", Type: arrow.BinaryTypes.String},
		{Name: "type", Type: arrow.BinaryTypes.String},
		{Name: "null", Type: arrow.BinaryTypes.String},
		{Name: "key", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, out)
	defer b.Release()
	for _, f := range sc.Fields() {
		typ := f.Type.String()
		if v, ok := f.Metadata.GetValue(flightsql.TypeNameKey); ok && v != "" {
			typ = v
		}
		null := "YES"
		if !f.Nullable {
			null = "NO"
		}
		key := ""
		if n, ok := keys[f.Name]; ok {
			key = fmt.Sprintf("PRI %d", n)
		}
		b.Field(0).(*array.StringBuilder).Append(f.Name)
		b.Field(1).(*array.StringBuilder).Append(typ)
		b.Field(2).(*array.StringBuilder).Append(null)
		b.Field(3).(*array.StringBuilder).Append(key)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	w, err := resultfmt.New(s.metaFormat(), s.o.Out, out, resultfmt.Options{Width: s.width()})
	if err != nil {
		return err
	}
	if err := w.Write(rec); err != nil {
		return err
	}
	return w.Close()
}

// getTables runs GetTables with LIKE patterns (nil: any) and returns its
// batches, which the caller releases.
func (c *Client) getTables(ctx context.Context, db, table *string, withSchema bool) ([]arrow.RecordBatch, error) {
	ctx = c.with(ctx)
	info, err := c.cl.GetTables(ctx, &flightsql.GetTablesOpts{
		DbSchemaFilterPattern: db, TableNameFilterPattern: table, IncludeSchema: withSchema})
	if err != nil {
		return nil, c.describe(err)
	}
	return c.collect(ctx, info)
}

// primaryKey returns the position (from 1) of each primary-key column.
func (c *Client) primaryKey(ctx context.Context, db, table string) (map[string]int32, error) {
	ctx = c.with(ctx)
	info, err := c.cl.GetPrimaryKeys(ctx, flightsql.TableRef{DBSchema: &db, Table: table})
	if err != nil {
		return nil, c.describe(err)
	}
	recs, err := c.collect(ctx, info)
	if err != nil {
		return nil, err
	}
	defer release(recs)
	keys := map[string]int32{}
	for _, rec := range recs {
		cols, ok1 := column(rec, "column_name").(*array.String)
		seq, ok2 := column(rec, "key_sequence").(*array.Int32)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("GetPrimaryKeys: unexpected schema %s", rec.Schema())
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			keys[cols.Value(i)] = seq.Value(i)
		}
	}
	return keys, nil
}

// collect reads every batch of info, retained.
func (c *Client) collect(ctx context.Context, info *flight.FlightInfo) ([]arrow.RecordBatch, error) {
	var recs []arrow.RecordBatch
	_, err := c.read(ctx, info, func(*arrow.Schema) (Sink, error) {
		return sinkFunc(func(rec arrow.RecordBatch) error {
			rec.Retain()
			recs = append(recs, rec)
			return nil
		}), nil
	})
	if err != nil {
		release(recs)
		return nil, err
	}
	return recs, nil
}

// column returns rec's column called name, or nil.
func column(rec arrow.RecordBatch, name string) arrow.Array {
	if idx := rec.Schema().FieldIndices(name); len(idx) > 0 {
		return rec.Column(idx[0])
	}
	return nil
}

type sinkFunc func(arrow.RecordBatch) error

func (f sinkFunc) Write(rec arrow.RecordBatch) error { return f(rec) }

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

func rowsOf(recs []arrow.RecordBatch) int64 {
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	return n
}

// likeEscape escapes LIKE's wildcards, so a name matches only itself.
func likeEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}

// splitName splits a possibly qualified, possibly quoted name
// (shop."orders$rt") into its parts, unquoted; unquoted parts are folded
// to lower case, as SQL folds them.
func splitName(name string) ([]string, error) {
	var parts []string
	i := 0
	for {
		if i < len(name) && name[i] == '"' {
			var b strings.Builder
			j := i + 1
			for {
				k := strings.IndexByte(name[j:], '"')
				if k < 0 {
					return nil, fmt.Errorf("%s: unterminated quoted name", name)
				}
				b.WriteString(name[j : j+k])
				j += k + 1
				if j < len(name) && name[j] == '"' {
					b.WriteByte('"')
					j++
					continue
				}
				break
			}
			parts = append(parts, b.String())
			i = j
		} else {
			j := strings.IndexByte(name[i:], '.')
			if j < 0 {
				j = len(name) - i
			}
			part := strings.TrimSpace(name[i : i+j])
			if part == "" {
				return nil, fmt.Errorf("%q: empty name", name)
			}
			parts = append(parts, strings.ToLower(part))
			i += j
		}
		if i >= len(name) {
			return parts, nil
		}
		if name[i] != '.' {
			return nil, fmt.Errorf("%q: expected '.' after a quoted name", name)
		}
		i++
	}
}
