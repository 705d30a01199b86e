//go:build duckdb_arrow

package query

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
)

// TestAddColumnKeepsEveryRow: ALTER TABLE ... ADD COLUMN was refused
// ("expected SET (...) or RESET (...)"). A column added first, after
// another or at the end reads as null in rows the lake and the log held
// before, takes values in rows written after, and tiering keeps both.
func TestAddColumnKeepsEveryRow(t *testing.T) {
	p := newPushdownEnv(t)
	e := p.e
	ctx := context.Background()
	run(t, e, "CREATE TABLE pk (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, e, "INSERT INTO pk VALUES (1, 'a'), (2, 'b')")
	_, err := p.tier.TierTable(ctx, DefaultDatabase, "pk")
	require.NoError(t, err)
	run(t, e, "INSERT INTO pk VALUES (3, 'c')") // in the log, under the first schema
	run(t, e, "ALTER TABLE pk ADD COLUMN w INT COMMENT 'weight'")
	run(t, e, "ALTER TABLE pk ADD z STRING FIRST")
	run(t, e, "ALTER TABLE pk ADD COLUMN u BOOLEAN AFTER id")
	run(t, e, "INSERT INTO pk (id, v, w, z, u) VALUES (4, 'd', 40, 'zz', true), (1, 'a2', 10, NULL, false)")
	want := [][]string{{"(null)", "1", "false", "a2", "10"}, {"(null)", "2", "(null)", "b", "(null)"}, {"(null)", "3", "(null)", "c", "(null)"}, {"zz", "4", "true", "d", "40"}}
	require.Equal(t, want, run(t, e, `SELECT z, id, u, v, w FROM "pk$rt" ORDER BY id`))
	require.Equal(t, [][]string{{"z"}, {"id"}, {"u"}, {"v"}, {"w"}}, run(t, e, `SELECT column_name FROM (DESCRIBE SELECT * FROM "pk$rt")`))
	_, err = p.tier.TierTable(ctx, DefaultDatabase, "pk")
	require.NoError(t, err)
	require.Equal(t, want, run(t, e, `SELECT z, id, u, v, w FROM pk ORDER BY id`))

	for q, want := range map[string]error{
		"ALTER TABLE pk ADD COLUMN v INT":             engine.ErrInvalid, // exists
		"ALTER TABLE pk ADD COLUMN n INT NOT NULL":    engine.ErrUnsupported,
		"ALTER TABLE pk ADD COLUMN n INT AFTER nope":  engine.ErrInvalid,
		"ALTER TABLE pk ADD COLUMN n INT PRIMARY KEY": engine.ErrInvalid,
		`ALTER TABLE "pk$rt" ADD COLUMN n INT`:        engine.ErrInvalid,
		"ALTER TABLE missing ADD COLUMN n INT":        engine.ErrNotFound,
		"ALTER TABLE pk ADD COLUMN n FOO":             engine.ErrInvalid,
	} {
		_, err := e.Execute(ctx, q)
		require.True(t, errors.Is(err, want), "%s: %v", q, err)
	}
}

// TestRenameAndDropColumnKeepTheOtherValues: RENAME COLUMN and DROP COLUMN
// were refused. A renamed column keeps its values under the new name, in
// the lake and in the log rows from before; a dropped column is gone from
// every row, and a name dropped and added again starts empty (a new field
// id). Key columns keep their names and stay.
func TestRenameAndDropColumnKeepTheOtherValues(t *testing.T) {
	p := newPushdownEnv(t)
	e := p.e
	ctx := context.Background()
	run(t, e, "CREATE TABLE pk (id BIGINT, v STRING, w INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, e, "INSERT INTO pk VALUES (1, 'a', 10), (2, 'b', 20)")
	_, err := p.tier.TierTable(ctx, DefaultDatabase, "pk")
	require.NoError(t, err)
	run(t, e, "INSERT INTO pk VALUES (3, 'c', 30)") // in the log, under the first schema
	run(t, e, "ALTER TABLE pk RENAME COLUMN v TO name")
	run(t, e, "ALTER TABLE pk DROP COLUMN w")
	run(t, e, "ALTER TABLE pk ADD COLUMN w INT")
	run(t, e, "INSERT INTO pk VALUES (4, 'd', 44)")
	want := [][]string{{"1", "a", "(null)"}, {"2", "b", "(null)"}, {"3", "c", "(null)"}, {"4", "d", "44"}}
	require.Equal(t, want, run(t, e, `SELECT id, name, w FROM "pk$rt" ORDER BY id`))
	_, err = p.tier.TierTable(ctx, DefaultDatabase, "pk")
	require.NoError(t, err)
	require.Equal(t, want, run(t, e, `SELECT id, name, w FROM pk ORDER BY id`))

	for q, want := range map[string]error{
		"ALTER TABLE pk RENAME COLUMN id TO key":   engine.ErrUnsupported,
		"ALTER TABLE pk DROP COLUMN id":            engine.ErrUnsupported,
		"ALTER TABLE pk RENAME COLUMN nope TO x":   engine.ErrInvalid,
		"ALTER TABLE pk RENAME COLUMN name TO w":   engine.ErrInvalid,
		"ALTER TABLE pk DROP COLUMN nope":          engine.ErrInvalid,
		"ALTER TABLE pk RENAME TO other":           engine.ErrInvalid,
		`ALTER TABLE "pk$rt" DROP COLUMN name`:     engine.ErrInvalid,
		"ALTER TABLE missing RENAME COLUMN a TO b": engine.ErrNotFound,
	} {
		_, err := e.Execute(ctx, q)
		require.True(t, errors.Is(err, want), "%s: %v", q, err)
	}
}
