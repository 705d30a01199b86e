package flightsql

import (
	"context"
	"path"
	"regexp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"

	"github.com/flightd/flightd/engine"
)

// metaInfo answers GetFlightInfo for a metadata command: the command itself
// is the ticket, and the framework routes its DoGet back here. Its size is
// known only for fixed lists (records >= 0); else -1.
func (s *Server) metaInfo(desc *flight.FlightDescriptor, sc *arrow.Schema, records ...int64) *flight.FlightInfo {
	n := int64(-1)
	if len(records) > 0 {
		n = records[0]
	}
	return &flight.FlightInfo{
		Schema:           flight.SerializeSchema(sc, s.Alloc),
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: desc.Cmd}}},
		TotalRecords:     n,
		TotalBytes:       -1,
	}
}

// single streams rec (taking its reference), cut to MaxBatchBytes like
// every result.
func (s *Server) single(rec arrow.RecordBatch) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	defer rec.Release()
	r, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	if err != nil {
		return nil, nil, toStatus(err)
	}
	return s.stream(context.Background(), func() {}, r)
}

// GetFlightInfoCatalogs: flightd has no catalogs.
func (s *Server) GetFlightInfoCatalogs(ctx context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.Catalogs, 0), nil
}

// DoGetCatalogs returns an empty list.
func (s *Server) DoGetCatalogs(ctx context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.empty(schema_ref.Catalogs)
}

// GetFlightInfoSchemas lists databases.
func (s *Server) GetFlightInfoSchemas(ctx context.Context, cmd flightsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.DBSchemas), nil
}

// DoGetDBSchemas lists databases matching the pattern.
func (s *Server) DoGetDBSchemas(ctx context.Context, cmd flightsql.GetDBSchemas) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	dbs, err := s.eng.Databases(ctx)
	if err != nil {
		return nil, nil, toStatus(err)
	}
	b := array.NewRecordBuilder(s.Alloc, schema_ref.DBSchemas)
	defer b.Release()
	if c := cmd.GetCatalog(); c == nil || *c == "" {
		match := likeMatcher(cmd.GetDBSchemaFilterPattern())
		for _, db := range dbs {
			if match(db) {
				b.Field(0).AppendNull()
				b.Field(1).(*array.StringBuilder).Append(db)
			}
		}
	}
	return s.single(b.NewRecordBatch())
}

// GetFlightInfoTables lists tables.
func (s *Server) GetFlightInfoTables(ctx context.Context, cmd flightsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	sc := schema_ref.Tables
	if cmd.GetIncludeSchema() {
		sc = schema_ref.TablesWithIncludedSchema
	}
	return s.metaInfo(desc, sc), nil
}

// DoGetTables lists t and t$rt of every matching database.
func (s *Server) DoGetTables(ctx context.Context, cmd flightsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	sc := schema_ref.Tables
	if cmd.GetIncludeSchema() {
		sc = schema_ref.TablesWithIncludedSchema
	}
	b := array.NewRecordBuilder(s.Alloc, sc)
	defer b.Release()
	if c := cmd.GetCatalog(); c != nil && *c != "" {
		return s.single(b.NewRecordBatch())
	}
	dbs, err := s.eng.Databases(ctx)
	if err != nil {
		return nil, nil, toStatus(err)
	}
	matchDB := likeMatcher(cmd.GetDBSchemaFilterPattern())
	matchTable := likeMatcher(cmd.GetTableNameFilterPattern())
	types := map[string]bool{}
	for _, t := range cmd.GetTableTypes() {
		types[strings.ToUpper(t)] = true
	}
	for _, db := range dbs {
		if !matchDB(db) {
			continue
		}
		tables, err := s.eng.Tables(ctx, db)
		if err != nil {
			continue // dropped while listing
		}
		for _, t := range tables {
			if !matchTable(t.Name) || (len(types) > 0 && !types[t.Type]) {
				continue
			}
			appendTable(b, t, cmd.GetIncludeSchema(), s)
		}
	}
	return s.single(b.NewRecordBatch())
}

func appendTable(b *array.RecordBuilder, t engine.TableInfo, withSchema bool, s *Server) {
	b.Field(0).AppendNull()
	b.Field(1).(*array.StringBuilder).Append(t.Database)
	b.Field(2).(*array.StringBuilder).Append(t.Name)
	b.Field(3).(*array.StringBuilder).Append(t.Type)
	if withSchema {
		b.Field(4).(*array.BinaryBuilder).Append(flight.SerializeSchema(tableSchema(t), s.Alloc))
	}
}

// GetFlightInfoTableTypes lists table types.
func (s *Server) GetFlightInfoTableTypes(ctx context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.TableTypes, int64(len(engine.TableTypes))), nil
}

// DoGetTableTypes returns TABLE and VIEW.
func (s *Server) DoGetTableTypes(ctx context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.Alloc, schema_ref.TableTypes)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues(engine.TableTypes, nil)
	return s.single(b.NewRecordBatch())
}

// likeMatcher returns a SQL LIKE matcher (% and _, backslash escapes); a nil
// pattern matches everything.
func likeMatcher(p *string) func(string) bool {
	if p == nil || *p == "" || *p == "%" {
		return func(string) bool { return true }
	}
	var re strings.Builder
	re.WriteString("^")
	esc := false
	for _, r := range *p {
		switch {
		case esc:
			re.WriteString(regexp.QuoteMeta(string(r)))
			esc = false
		case r == '\\':
			esc = true
		case r == '%':
			re.WriteString(".*")
		case r == '_':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re.WriteString("$")
	rx, err := regexp.Compile(re.String())
	if err != nil {
		return func(s string) bool { ok, _ := path.Match(*p, s); return ok }
	}
	return rx.MatchString
}

// GetFlightInfoPrimaryKeys answers for a table's primary key.
func (s *Server) GetFlightInfoPrimaryKeys(ctx context.Context, cmd flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.PrimaryKeys), nil
}

// DoGetPrimaryKeys lists the primary-key columns of the tables cmd names
// (t and t$rt share t's key), in key order: what JDBC's getPrimaryKeys and
// a tool's data editor use to tell rows apart. A table without a key, or
// one that does not exist, has no rows.
func (s *Server) DoGetPrimaryKeys(ctx context.Context, cmd flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.Alloc, schema_ref.PrimaryKeys)
	defer b.Release()
	if cmd.Catalog != nil && *cmd.Catalog != "" {
		return s.single(b.NewRecordBatch())
	}
	dbs, err := s.eng.Databases(ctx)
	if err != nil {
		return nil, nil, toStatus(err)
	}
	for _, db := range dbs {
		if cmd.DBSchema != nil && *cmd.DBSchema != db {
			continue
		}
		tables, err := s.eng.Tables(ctx, db)
		if err != nil {
			continue // dropped while listing
		}
		for _, t := range tables {
			if t.Name != cmd.Table {
				continue
			}
			for i, k := range t.PrimaryKeys {
				b.Field(0).AppendNull()
				b.Field(1).(*array.StringBuilder).Append(t.Database)
				b.Field(2).(*array.StringBuilder).Append(t.Name)
				b.Field(3).(*array.StringBuilder).Append(k)
				b.Field(4).(*array.Int32Builder).Append(int32(i + 1))
				b.Field(5).AppendNull()
			}
		}
	}
	return s.single(b.NewRecordBatch())
}

// Paimon tables have no foreign keys: imported and exported keys and
// cross references are empty lists, not errors (DBeaver's navigator asks
// for them for every table).

// GetFlightInfoImportedKeys answers with an empty list.
func (s *Server) GetFlightInfoImportedKeys(ctx context.Context, cmd flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.ImportedKeys, 0), nil
}

// DoGetImportedKeys returns no rows.
func (s *Server) DoGetImportedKeys(ctx context.Context, cmd flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.empty(schema_ref.ImportedKeys)
}

// GetFlightInfoExportedKeys answers with an empty list.
func (s *Server) GetFlightInfoExportedKeys(ctx context.Context, cmd flightsql.TableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.ExportedKeys, 0), nil
}

// DoGetExportedKeys returns no rows.
func (s *Server) DoGetExportedKeys(ctx context.Context, cmd flightsql.TableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.empty(schema_ref.ExportedKeys)
}

// GetFlightInfoCrossReference answers with an empty list.
func (s *Server) GetFlightInfoCrossReference(ctx context.Context, cmd flightsql.CrossTableRef, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.metaInfo(desc, schema_ref.CrossReference, 0), nil
}

// DoGetCrossReference returns no rows.
func (s *Server) DoGetCrossReference(ctx context.Context, cmd flightsql.CrossTableRef) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.empty(schema_ref.CrossReference)
}

// empty streams a result of sc without rows.
func (s *Server) empty(sc *arrow.Schema) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.Alloc, sc)
	defer b.Release()
	return s.single(b.NewRecordBatch())
}
