//go:build duckdb_arrow

package query

import (
	"context"
	"database/sql/driver"
	"fmt"
	"sync"

	"github.com/duckdb/duckdb-go/v2"
)

// maxIdleConns bounds the DuckDB connections kept for reuse.
const maxIdleConns = 8

// conn is one DuckDB connection with its Arrow interface and, once used,
// its prepared json_serialize_sql statement.
type conn struct {
	c   driver.Conn
	ar  *duckdb.Arrow
	ser driver.Stmt
	// schema is DuckDB's current schema on c ("" until set: main), where
	// it looks unqualified names up (useSchema).
	schema string
}

// connPool keeps idle connections: opening one (duckdb_connect and the
// session settings) and preparing its serialize statement were half of a
// point query's time in the engine (BenchmarkPointQuery).
type connPool struct {
	mu     sync.Mutex
	idle   []*conn
	closed bool
}

// connect returns an idle connection, or a new one.
func (e *Engine) connect(ctx context.Context) (*conn, error) {
	e.pool.mu.Lock()
	if n := len(e.pool.idle); n > 0 {
		c := e.pool.idle[n-1]
		e.pool.idle = e.pool.idle[:n-1]
		e.pool.mu.Unlock()
		return c, nil
	}
	e.pool.mu.Unlock()
	c, err := e.conn.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("query: connect duckdb: %w", err)
	}
	ar, err := duckdb.NewArrowFromConn(c)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &conn{c: c, ar: ar}, nil
}

// release gives c back for reuse once the statement that used it is done
// (its result closed, its views dropped); a full pool closes it.
func (e *Engine) release(c *conn) {
	e.pool.mu.Lock()
	if !e.pool.closed && len(e.pool.idle) < maxIdleConns {
		e.pool.idle = append(e.pool.idle, c)
		e.pool.mu.Unlock()
		return
	}
	e.pool.mu.Unlock()
	c.close()
}

// closeIdle closes the idle connections; later releases close theirs.
func (p *connPool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
}

func (c *conn) close() {
	if c.ser != nil {
		_ = c.ser.Close()
	}
	_ = c.c.Close()
}

// serialize returns DuckDB's JSON parse tree of sql (json_serialize_sql).
func (c *conn) serialize(ctx context.Context, sql string) (string, error) {
	return c.scalar(ctx, &c.ser, "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", sql)
}

// scalar runs query, prepared once per connection into *st, with one
// argument, and returns the string it gives.
func (c *conn) scalar(ctx context.Context, st *driver.Stmt, query string, arg string) (string, error) {
	if *st == nil {
		p, err := c.c.(driver.ConnPrepareContext).PrepareContext(ctx, query)
		if err != nil {
			return "", err
		}
		*st = p
	}
	rows, err := (*st).(driver.StmtQueryContext).QueryContext(ctx, []driver.NamedValue{{Ordinal: 1, Value: arg}})
	if err != nil {
		return "", err
	}
	return firstString(rows)
}

func (c *conn) exec(ctx context.Context, sql string) error {
	_, err := c.c.(driver.ExecerContext).ExecContext(ctx, sql, nil)
	return err
}

// firstString reads the first column of the first row and closes rows.
func firstString(rows driver.Rows) (string, error) {
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		return "", fmt.Errorf("query: no result: %w", err)
	}
	s, _ := v[0].(string)
	return s, nil
}
