package query

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestShapeOf(t *testing.T) {
	for _, tc := range []struct {
		sql, key string
		lits     []literal
		ok       bool
	}{
		{`SELECT id FROM db."t$rt" WHERE id = 42`, "SELECT id FROM db.\"t$rt\" WHERE id = \x00i", []literal{{kind: 'i', n: 42}}, true},
		{`SELECT * FROM t1 WHERE s = 'it''s' AND n=-7 AND b = 3000000000`, "SELECT * FROM t1 WHERE s = \x00s AND n=\x00i AND b = \x00l",
			[]literal{{kind: 's', s: "it's"}, {kind: 'i', n: -7}, {kind: 'l', n: 3000000000}}, true},
		{`SELECT 1.5, 1e3, 0x1F, 1_000, 99999999999999999999 -- 5 'x'`, "SELECT 1.5, 1e3, 0x1F, 1_000, 99999999999999999999 -- 5 'x'", nil, true},
		{`SELECT a-1 /* 2 /* 3 */ 4 */ FROM "x""7"`, "SELECT a-\x00i /* 2 /* 3 */ 4 */ FROM \"x\"\"7\"", []literal{{kind: 'i', n: 1}}, true},
		{`SELECT E'a\n'`, "", nil, false},
		{`SELECT $1`, "", nil, false},
		{`SELECT $$x$$`, "", nil, false},
		{`SELECT ?`, "", nil, false},
		{`SELECT 'open`, "", nil, false},
	} {
		key, lits, ok := shapeOf(tc.sql)
		require.Equal(t, tc.ok, ok, tc.sql)
		if !ok {
			continue
		}
		require.Equal(t, tc.key, key, tc.sql)
		if tc.lits != nil {
			require.Equal(t, tc.lits, lits, tc.sql)
		}
		require.Equal(t, tc.sql, render(key, lits), "render gives the statement back")
	}
}

// The cache's tree for a statement is the tree DuckDB gives it, for
// statements whose shapes were learnt from other literals: random values
// of every kind (int32 and int64 bounds, negative, quotes, empty and
// non-ASCII strings, values equal to another literal's) in statements
// where literals are constants, positions, limits and casts.
func TestParseCacheMatchesDuckDB(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	c, err := e.connect(ctx)
	require.NoError(t, err)
	defer e.release(c)
	shapes := []string{
		`SELECT id FROM db."t$rt" WHERE id = %d`,
		`SELECT id, v FROM db.t WHERE id >= %d AND id < %d AND v = %s`,
		`SELECT * FROM db."t$rt" WHERE s IN (%s, %s, %s) ORDER BY 1 LIMIT %d`,
		`SELECT %d + %d, upper(%s), %s::DATE FROM db.t GROUP BY 1 HAVING count(*) > %d`,
		`SELECT x FROM db.t WHERE x=%d -- %d`,
		`SELECT x - %d FROM db.t /* %s */ WHERE x = - %d AND y = -(%d)`,
	}
	ints := func(r *rand.Rand) int64 {
		switch r.IntN(6) {
		case 0:
			return math.MaxInt32
		case 1:
			return math.MinInt32 + r.Int64N(2) // BIGINT, then INTEGER
		case 2:
			return int64(math.MaxInt32) + 1 + r.Int64N(1<<40)
		case 3:
			return -r.Int64N(100)
		case 4:
			return 1_000_000_007 // a sentinel's value
		}
		return r.Int64N(1000)
	}
	strs := []string{"", "a", "it's", "''", "ünï", "2024-01-0", "flightd\x01slot\x010", "x y"}
	r := rand.New(rand.NewPCG(1, 2))
	cached := make([]int, len(shapes))
	for si, shape := range shapes {
		for range 25 {
			var args []any
			for _, verb := range strings.Split(shape, "%")[1:] {
				if verb[0] == 'd' {
					args = append(args, ints(r))
				} else {
					s := strs[r.IntN(len(strs))]
					if strings.Contains(shape, "::DATE") && len(args) == 3 {
						s = fmt.Sprintf("2024-01-%02d", 1+r.IntN(28))
					}
					args = append(args, "'"+strings.ReplaceAll(s, "'", "''")+"'")
				}
			}
			sql := fmt.Sprintf(shape, args...)
			key, _, _ := shapeOf(sql)
			e.shapes.mu.Lock()
			known := e.shapes.m[key]
			e.shapes.mu.Unlock()
			got, ok, err := e.parse(ctx, c, sql)
			require.NoError(t, err)
			require.True(t, ok, sql)
			js, err := c.serialize(ctx, sql)
			require.NoError(t, err)
			want, ok := parseTree(js)
			require.True(t, ok)
			require.Equal(t, withoutLocations(t, want), withoutLocations(t, got), sql)
			if known != nil && known.tree != nil {
				cached[si]++
			}
		}
	}
	// Statements are served from learnt shapes (the key also holds each
	// integer's type; literals in comments are part of it).
	for si := range 4 {
		require.Positive(t, cached[si], shapes[si])
	}

	// A shape is learnt from its first statement, whatever the key.
	first := `SELECT v FROM db.t WHERE id = 1000000007 AND v = 'a'`
	_, _, err = e.parse(ctx, c, first)
	require.NoError(t, err)
	key, _, _ := shapeOf(first)
	require.Nil(t, e.shapes.m[key], "a sentinel's value: learnt next time")
	for _, sql := range []string{`SELECT v FROM db.t WHERE id = 1 AND v = 'a'`, `SELECT v FROM db.t WHERE id = 2 AND v = 'b'`} {
		_, _, err = e.parse(ctx, c, sql)
		require.NoError(t, err)
		require.NotNil(t, e.shapes.m[key].tree, sql)
	}
}

// withoutLocations is a tree's JSON without query_location, which points
// into the statement's text.
func withoutLocations(t *testing.T, tree *object) string {
	t.Helper()
	var strip func(v any)
	strip = func(v any) {
		switch x := v.(type) {
		case *object:
			x.set("query_location", nil)
			for _, k := range x.keys {
				strip(x.get(k))
			}
		case []any:
			for _, y := range x {
				strip(y)
			}
		}
	}
	cp := copyTree(tree)
	strip(cp)
	b, err := json.Marshal(cp)
	require.NoError(t, err)
	return string(b)
}

// Point queries of one shape with different keys return their own rows.
func TestParseCacheServesEachKey(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE DATABASE db")
	run(t, e, "CREATE TABLE db.t (id BIGINT, s STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	run(t, e, "INSERT INTO db.t VALUES (1, 'a'), (2, 'b'), (3, 'it''s')")
	for i := 0; i < 3; i++ {
		for id, s := range map[int]string{1: "a", 2: "b", 3: "it's"} {
			require.Equal(t, [][]string{{s}}, run(t, e, fmt.Sprintf(`SELECT s FROM db."t$rt" WHERE id = %d`, id)))
			require.Equal(t, [][]string{{fmt.Sprint(id)}}, run(t, e, fmt.Sprintf(`SELECT id FROM db."t$rt" WHERE s = '%s'`, strings.ReplaceAll(s, "'", "''"))))
			require.Equal(t, [][]string{{s + "!"}}, run(t, e, fmt.Sprintf(`SELECT s || '!' FROM db."t$rt" WHERE id = %d`, id)))
		}
	}
}
