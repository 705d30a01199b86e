package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-adbc/go/adbc/validation"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"github.com/stretchr/testify/suite"

	"github.com/flightd/flightd/internal/testserver"
)

// TestADBCValidation runs ADBC's own validation suite for drivers
// (github.com/apache/arrow-adbc/go/adbc/validation) through the Flight SQL
// driver against the real server. Each quirk below says what flightd does
// and why; a suite test that a quirk skips names the reason there.
func TestADBCValidation(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir())
	out, err := exec.Command(testserver.Binary(t), "version").Output()
	require.NoError(t, err)
	version, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "flightd ")
	require.True(t, ok, "flightd version printed %q", out)
	q := &flightdQuirks{srv: srv, version: version}
	suite.Run(t, &validation.DatabaseTests{Quirks: q})
	suite.Run(t, &connectionTests{validation.ConnectionTests{Quirks: q}})
	suite.Run(t, &validation.StatementTests{Quirks: q})
}

// connectionTests is the suite's connection tests but one.
type connectionTests struct{ validation.ConnectionTests }

// TestMetadataGetObjectsColumns is skipped: its first case asks
// GetObjects for catalogs only and expects to find the catalog "".
// flightd has no catalogs, so GetCatalogs is empty (as Dremio's is); the
// driver makes up the empty catalog only below catalog depth
// (flightsql_connection.go, GetObjects). TestADBCGetObjects checks the
// other depths and filters.
func (c *connectionTests) TestMetadataGetObjectsColumns() {
	c.T().Skip("flightd has no catalogs: GetCatalogs is empty")
}

type flightdQuirks struct {
	srv     *testserver.Server
	version string // the server's, as `flightd version` prints it
	mem     *memory.CheckedAllocator
}

func (q *flightdQuirks) SetupDriver(t *testing.T) adbc.Driver {
	q.mem = memory.NewCheckedAllocator(memory.DefaultAllocator)
	return flightsql.NewDriver(q.mem)
}

// TearDownDriver checks that the client released every buffer it took.
func (q *flightdQuirks) TearDownDriver(t *testing.T, _ adbc.Driver) {
	q.mem.AssertSize(t, 0)
}

// DatabaseOptions keep cookies: the current schema is a session, and a
// session lives in a cookie.
func (q *flightdQuirks) DatabaseOptions() map[string]string {
	return map[string]string{
		adbc.OptionKeyURI:                q.srv.URI(),
		flightsql.OptionCookieMiddleware: adbc.OptionValueEnabled,
	}
}

func (q *flightdQuirks) BindParameter(int) string { return "?" }

// SupportsBulkIngest is false, which skips the suite's ingest tests
// (flightd's own cover ingest: client_test.go, typematrix_test.go):
//   - each reads the table by its name right after ingesting; a name t is
//     the last committed lake snapshot, the rows are in t$rt at once and in
//     t after the next tiering round (docs/sql.md);
//   - the Go driver (v1.12.0) keeps the bound batch after an ingest, and
//     the next SetSqlQuery and ExecuteQuery on the statement fail with
//     "must set IngestTargetTable before bulk ingestion";
//   - TestSqlIngestErrors wants SQLSTATE 42S02, which the Flight SQL driver
//     never sets, and StatusInternal where flightd answers AlreadyExists;
//   - replace is refused: lake-stream tables are append or upsert only.
func (q *flightdQuirks) SupportsBulkIngest(string) bool { return false }

func (q *flightdQuirks) SupportsConcurrentStatements() bool { return true }
func (q *flightdQuirks) SupportsCurrentCatalogSchema() bool { return true }
func (q *flightdQuirks) SupportsGetSetOptions() bool        { return true }
func (q *flightdQuirks) SupportsExecuteSchema() bool        { return true }
func (q *flightdQuirks) SupportsPartitionedData() bool      { return true }

// SupportsStatistics: the Flight SQL driver has no statistics call.
func (q *flightdQuirks) SupportsStatistics() bool { return false }

// SupportsTransactions: flightd has none; every statement takes effect at
// once (SqlInfo FLIGHT_SQL_SERVER_TRANSACTION is NONE).
func (q *flightdQuirks) SupportsTransactions() bool                  { return false }
func (q *flightdQuirks) SupportsGetParameterSchema() bool            { return true }
func (q *flightdQuirks) SupportsDynamicParameterBinding() bool       { return true }
func (q *flightdQuirks) SupportsErrorIngestIncompatibleSchema() bool { return true }

func (q *flightdQuirks) GetMetadata(code adbc.InfoCode) interface{} {
	switch code {
	case adbc.InfoDriverName:
		return "ADBC Flight SQL Driver - Go"
	case adbc.InfoDriverVersion, adbc.InfoDriverArrowVersion:
		return "(unknown or development build)" // the driver is a module of this test
	case adbc.InfoDriverADBCVersion:
		return adbc.AdbcVersion1_1_0
	case adbc.InfoVendorName:
		return "flightd"
	case adbc.InfoVendorVersion:
		return q.version
	case adbc.InfoVendorArrowVersion:
		return arrow.PkgVersion
	}
	return nil
}

// CreateSampleTable creates the table from the batch's schema and writes
// its rows with bulk ingest. It ingests a copy: the driver (v1.12.0) never
// releases a batch bound for ingest, which the suite's allocator would
// report as the test's leak.
func (q *flightdQuirks) CreateSampleTable(name string, r arrow.RecordBatch) error {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(r.Schema()))
	if err := w.Write(r); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	rd, err := ipc.NewReader(&buf)
	if err != nil {
		return err
	}
	defer rd.Release()
	if !rd.Next() {
		return fmt.Errorf("sample batch: %v", rd.Err())
	}
	r = rd.RecordBatch()
	ctx := context.Background()
	db, err := flightsql.NewDriver(memory.DefaultAllocator).NewDatabase(q.DatabaseOptions())
	if err != nil {
		return err
	}
	defer db.Close()
	cn, err := db.Open(ctx)
	if err != nil {
		return err
	}
	defer cn.Close()
	c := &client{conn: cn}
	if err := q.DropTable(cn, name); err != nil {
		return err
	}
	_, err = c.ingest("", name, adbc.OptionValueIngestModeCreate, r)
	return err
}

// SampleTableSchemaMetadata is the Flight SQL column metadata GetTables
// gives a column of an ingested table (flightsql/columns.go), with the
// Paimon field id.
func (q *flightdQuirks) SampleTableSchemaMetadata(table string, dt arrow.DataType) arrow.Metadata {
	md := map[string]string{
		"ARROW:FLIGHT:SQL:IS_AUTO_INCREMENT": "0",
		"ARROW:FLIGHT:SQL:IS_SEARCHABLE":     "1",
		"ARROW:FLIGHT:SQL:SCHEMA_NAME":       q.DBSchema(),
		"ARROW:FLIGHT:SQL:TABLE_NAME":        table,
		"ARROW:FLIGHT:SQL:IS_READ_ONLY":      "0",
	}
	switch dt.ID() {
	case arrow.INT64:
		md["PARQUET:field_id"] = "0"
		md["ARROW:FLIGHT:SQL:TYPE_NAME"] = "BIGINT"
		md["ARROW:FLIGHT:SQL:IS_CASE_SENSITIVE"] = "0"
	case arrow.STRING:
		md["PARQUET:field_id"] = "1"
		md["ARROW:FLIGHT:SQL:TYPE_NAME"] = "STRING"
		md["ARROW:FLIGHT:SQL:IS_CASE_SENSITIVE"] = "1"
		md["ARROW:FLIGHT:SQL:PRECISION"] = "2147483647"
	}
	return arrow.MetadataFrom(md)
}

func (q *flightdQuirks) DropTable(cn adbc.Connection, name string) (err error) {
	st, err := cn.NewStatement()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	if err := st.SetSqlQuery(fmt.Sprintf("DROP TABLE IF EXISTS %q", name)); err != nil {
		return err
	}
	_, err = st.ExecuteUpdate(context.Background())
	return err
}

// Catalog is "": flightd has no catalogs. DBSchema is the session's
// database, default until USE or the schema option says otherwise.
func (q *flightdQuirks) Catalog() string         { return "" }
func (q *flightdQuirks) DBSchema() string        { return "default" }
func (q *flightdQuirks) Alloc() memory.Allocator { return q.mem }

// TestADBCGetObjects checks what the skipped TestMetadataGetObjectsColumns
// would below catalog depth: the tables of a database, with their columns
// in order, found by filters.
func TestADBCGetObjects(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir())
	c := connect(t, srv)
	c.mustExec("CREATE DATABASE shop")
	c.mustExec("CREATE TABLE shop.t (int64s BIGINT, strings STRING, PRIMARY KEY (int64s) NOT ENFORCED)")
	ctx := context.Background()
	objects := func(depth adbc.ObjectDepth, db, table, column *string) []string {
		t.Helper()
		r, err := c.conn.GetObjects(ctx, depth, nil, db, table, column, nil)
		require.NoError(t, err)
		defer r.Release()
		var out []string
		for r.Next() {
			rec := r.RecordBatch()
			cats := rec.Column(0).(*array.String)
			dbsList := rec.Column(1).(*array.List)
			dbs := dbsList.ListValues().(*array.Struct)
			tablesList := dbs.Field(1).(*array.List)
			tables := tablesList.ListValues().(*array.Struct)
			colsList := tables.Field(2).(*array.List)
			cols := colsList.ListValues().(*array.Struct)
			for i := 0; i < int(rec.NumRows()); i++ {
				out = append(out, "catalog "+cats.Value(i))
				d0, d1 := dbsList.ValueOffsets(i)
				for d := d0; d < d1; d++ {
					out = append(out, "db "+dbs.Field(0).(*array.String).Value(int(d)))
					t0, t1 := tablesList.ValueOffsets(int(d))
					for tb := t0; tb < t1; tb++ {
						out = append(out, "table "+tables.Field(0).(*array.String).Value(int(tb))+" "+tables.Field(1).(*array.String).Value(int(tb)))
						c0, c1 := colsList.ValueOffsets(int(tb))
						for col := c0; col < c1; col++ {
							out = append(out, fmt.Sprintf("column %s %d", cols.Field(0).(*array.String).Value(int(col)), cols.Field(1).(*array.Int32).Value(int(col))))
						}
					}
				}
			}
		}
		require.NoError(t, r.Err())
		return out
	}
	shop, tname, in, nowhere := "shop", "t", "in%", "nowhere"
	require.Equal(t, []string{"catalog ", "db shop", "table t TABLE", "column int64s 1", "column strings 2"},
		objects(adbc.ObjectDepthColumns, &shop, &tname, nil))
	require.Equal(t, []string{"catalog ", "db shop", "table t TABLE", "column int64s 1"},
		objects(adbc.ObjectDepthColumns, &shop, &tname, &in))
	require.Equal(t, []string{"catalog ", "db shop", "table t TABLE", "table t$changelog VIEW", "table t$rt VIEW"},
		sortedAfter(objects(adbc.ObjectDepthTables, &shop, nil, nil), 2))
	require.Equal(t, []string{"catalog ", "db default", "db shop"}, sortedAfter(objects(adbc.ObjectDepthDBSchemas, nil, nil, nil), 1))
	require.Equal(t, []string{"catalog "}, objects(adbc.ObjectDepthColumns, &nowhere, nil, nil))
}

// sortedAfter sorts lines after the first n, whose order GetObjects fixes.
func sortedAfter(lines []string, n int) []string {
	sort.Strings(lines[n:])
	return lines
}
