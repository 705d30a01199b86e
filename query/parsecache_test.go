//go:build duckdb_arrow

package query

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/query/plan"
)

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
			key, _, _ := plan.ShapeOf(sql)
			known := e.shapes.Get(key)
			got, ok, err := e.parse(ctx, c, plan.Analyze(sql))
			require.NoError(t, err)
			require.True(t, ok, sql)
			js, err := c.serialize(ctx, sql)
			require.NoError(t, err)
			want, ok := plan.ParseTree(js)
			require.True(t, ok)
			require.Equal(t, withoutLocations(t, want), withoutLocations(t, got), sql)
			if known.Cached() {
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
	_, _, err = e.parse(ctx, c, plan.Analyze(first))
	require.NoError(t, err)
	key, _, _ := plan.ShapeOf(first)
	require.Nil(t, e.shapes.Get(key), "a sentinel's value: learnt next time")
	for _, sql := range []string{`SELECT v FROM db.t WHERE id = 1 AND v = 'a'`, `SELECT v FROM db.t WHERE id = 2 AND v = 'b'`} {
		_, _, err = e.parse(ctx, c, plan.Analyze(sql))
		require.NoError(t, err)
		require.True(t, e.shapes.Get(key).Cached(), sql)
	}
}

// withoutLocations is a tree's JSON without query_location, which points
// into the statement's text.
func withoutLocations(t *testing.T, tree *plan.Object) string {
	t.Helper()
	b, err := json.Marshal(tree)
	require.NoError(t, err)
	return queryLocation.ReplaceAllString(string(b), `"query_location":null`)
}

// queryLocation is a query_location key and its value in a tree's JSON
// (a key's quotes are never escaped, a string's are).
var queryLocation = regexp.MustCompile(`"query_location":[0-9]+`)

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
