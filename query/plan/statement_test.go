package plan

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/sqlparse"
)

func TestAnalyzeReadsTheStatementOnce(t *testing.T) {
	for _, tc := range []struct {
		name, sql string
		kind      engine.Kind
		class     sqlparse.Kind
		params    int
		shape     bool
		explains  string
		analyze   bool
		check     string // what Check says, "" for nothing
	}{
		{name: "query", sql: "SELECT v FROM t WHERE id = 7", kind: engine.KindQuery, class: sqlparse.KindQuery, shape: true},
		{name: "parameters", sql: "SELECT v FROM t WHERE id = ?", kind: engine.KindQuery, class: sqlparse.KindQuery, params: 1},
		{name: "explain", sql: "EXPLAIN ANALYZE SELECT 1", kind: engine.KindQuery, class: sqlparse.KindQuery, shape: true, explains: " SELECT 1", analyze: true},
		{name: "use", sql: "USE shop", kind: engine.KindSession, class: sqlparse.KindUse, shape: false},
		{name: "set", sql: "SET streaming = true", kind: engine.KindSession, class: sqlparse.KindSet},
		{name: "insert", sql: "INSERT INTO t VALUES (1)", kind: engine.KindUpdate, class: sqlparse.KindInsert},
		{name: "refused", sql: "PRAGMA x", kind: engine.KindUpdate, class: sqlparse.KindOther},
		{name: "hint", sql: "SELECT /*+ OPTIONS('a'='b') */ 1", kind: engine.KindQuery, class: sqlparse.KindQuery, shape: true, check: "hint comment (/*+ ... */) at offset 7"},
		{name: "nul", sql: "SELECT 1\x00", kind: engine.KindUpdate, class: sqlparse.KindOther, check: "NUL byte at offset 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := Analyze(tc.sql)
			require.Equal(t, tc.sql, st.SQL())
			require.Equal(t, tc.kind, st.Kind())
			require.Equal(t, tc.class, st.Class())
			_, n, err := st.Params()
			require.NoError(t, err)
			require.Equal(t, tc.params, n)
			_, _, ok := st.Shape()
			require.Equal(t, tc.shape, ok)
			inner, analyze := st.Explains()
			if tc.explains == "" {
				require.Nil(t, inner)
			} else {
				require.Equal(t, tc.explains, inner.SQL())
				require.Equal(t, engine.KindQuery, inner.Kind())
			}
			require.Equal(t, tc.analyze, analyze)
			if tc.check == "" {
				require.NoError(t, st.Check())
			} else {
				require.ErrorIs(t, st.Check(), engine.ErrInvalid)
				require.ErrorContains(t, st.Check(), tc.check)
			}
		})
	}
}

func TestStatementParsesItsInsertOnce(t *testing.T) {
	st := Analyze("INSERT INTO db.t (a, b) VALUES (?, ?)")
	ins, err := st.Insert()
	require.NoError(t, err)
	again, _ := st.Insert()
	require.Same(t, ins, again)
	require.Equal(t, []string{"a", "b"}, ins.Columns)
	row, ok := st.ValuesRow()
	require.True(t, ok)
	require.Len(t, row.Elems, 2)

	_, err = Analyze("SELECT 1").Insert()
	require.Error(t, err)
	_, ok = Analyze("SELECT 1").ValuesRow()
	require.False(t, ok)
}

// A statement's tree is set once, by whichever stage parses it first, and
// every stage after reads that one, from any goroutine.
func TestStatementKeepsItsFirstTree(t *testing.T) {
	st := Analyze("SELECT 1")
	_, _, known := st.Tree()
	require.False(t, known)
	trees := make([]*Object, 8)
	for i := range trees {
		trees[i], _ = ParseTree(`{"error":false,"statements":[]}`)
	}
	var wg sync.WaitGroup
	for _, tree := range trees {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.SetTree(tree, true)
			got, parsed, known := st.Tree()
			require.True(t, known)
			require.True(t, parsed)
			require.NotNil(t, got)
		}()
	}
	wg.Wait()
	first, _, _ := st.Tree()
	require.Contains(t, trees, first)

	long := Analyze("SELECT '" + string(make([]byte, MaxCachedSQL)) + "'")
	long.SetTree(trees[0], true)
	_, _, known = long.Tree()
	require.False(t, known, "a long statement keeps no tree")
}
