package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// client is an ADBC connection to one server.
type client struct {
	t    *testing.T
	db   adbc.Database
	conn adbc.Connection
}

func connect(t *testing.T, s *testserver.Server) *client {
	t.Helper()
	db, err := newDriver().NewDatabase(map[string]string{adbc.OptionKeyURI: s.URI()})
	require.NoError(t, err)
	conn, err := db.Open(context.Background())
	require.NoError(t, err)
	c := &client{t: t, db: db, conn: conn}
	t.Cleanup(c.close)
	return c
}

func (c *client) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
	if c.db != nil {
		c.db.Close()
		c.db = nil
	}
}

func newDriver() adbc.Driver { return flightsql.NewDriver(memory.DefaultAllocator) }

// exec runs a statement that returns no rows.
func (c *client) exec(sql string) (int64, error) {
	st, err := c.conn.NewStatement()
	require.NoError(c.t, err)
	defer st.Close()
	if err := st.SetSqlQuery(sql); err != nil {
		return 0, err
	}
	return st.ExecuteUpdate(context.Background())
}

func (c *client) mustExec(sql string) int64 {
	c.t.Helper()
	n, err := c.exec(sql)
	require.NoError(c.t, err, sql)
	return n
}

// query runs sql and returns its rows rendered as strings.
func (c *client) query(sql string) ([][]string, error) {
	st, err := c.conn.NewStatement()
	require.NoError(c.t, err)
	defer st.Close()
	if err := st.SetSqlQuery(sql); err != nil {
		return nil, err
	}
	r, _, err := st.ExecuteQuery(context.Background())
	if err != nil {
		return nil, err
	}
	defer r.Release()
	return rowsOf(r)
}

// rowsOf reads r's rows rendered as strings (NULL for a null).
func rowsOf(r array.RecordReader) ([][]string, error) {
	var out [][]string
	for r.Next() {
		rec := r.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]string, rec.NumCols())
			for j := range row {
				if rec.Column(j).IsNull(i) {
					row[j] = "NULL"
				} else {
					row[j] = rec.Column(j).ValueStr(i)
				}
			}
			out = append(out, row)
		}
	}
	return out, r.Err()
}

func (c *client) mustQuery(sql string) [][]string {
	c.t.Helper()
	rows, err := c.query(sql)
	require.NoError(c.t, err, sql)
	return rows
}

// scalar returns the single value of a one-row, one-column query.
func (c *client) scalar(sql string) string {
	c.t.Helper()
	rows := c.mustQuery(sql)
	require.Len(c.t, rows, 1, sql)
	require.Len(c.t, rows[0], 1, sql)
	return rows[0][0]
}

// ingest appends rec to db.table through ADBC bulk ingest. It reports
// every failure as an error (writers of the crash test run without a t).
func (c *client) ingest(db, table, mode string, rec arrow.RecordBatch) (int64, error) {
	st, err := c.conn.NewStatement()
	if err != nil {
		return 0, err
	}
	defer st.Close()
	for k, v := range map[string]string{
		adbc.OptionKeyIngestTargetTable:      table,
		adbc.OptionValueIngestTargetDBSchema: db,
		adbc.OptionKeyIngestMode:             mode,
	} {
		if err := st.SetOption(k, v); err != nil {
			return 0, err
		}
	}
	if err := st.Bind(context.Background(), rec); err != nil {
		return 0, err
	}
	return st.ExecuteUpdate(context.Background())
}

// sortedRows renders rows as sorted lines for comparison.
func sortedRows(rows [][]string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = strings.Join(r, "|")
	}
	sort.Strings(out)
	return out
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprint(err)
}

var _ = array.NewRecordBuilder
