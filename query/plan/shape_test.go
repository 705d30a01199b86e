package plan

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestShapeOf(t *testing.T) {
	for _, tc := range []struct {
		sql, key string
		lits     []Literal
		ok       bool
	}{
		{`SELECT id FROM db."t$rt" WHERE id = 42`, "SELECT id FROM db.\"t$rt\" WHERE id = \x00i", []Literal{{kind: 'i', n: 42}}, true},
		{`SELECT * FROM t1 WHERE s = 'it''s' AND n=-7 AND b = 3000000000`, "SELECT * FROM t1 WHERE s = \x00s AND n=\x00i AND b = \x00l",
			[]Literal{{kind: 's', s: "it's"}, {kind: 'i', n: -7}, {kind: 'l', n: 3000000000}}, true},
		{`SELECT 1.5, 1e3, 0x1F, 1_000, 99999999999999999999 -- 5 'x'`, "SELECT 1.5, 1e3, 0x1F, 1_000, 99999999999999999999 -- 5 'x'", nil, true},
		{`SELECT a-1 /* 2 /* 3 */ 4 */ FROM "x""7"`, "SELECT a-\x00i /* 2 /* 3 */ 4 */ FROM \"x\"\"7\"", []Literal{{kind: 'i', n: 1}}, true},
		{`SELECT E'a\n'`, "", nil, false},
		{`SELECT $1`, "", nil, false},
		{`SELECT $$x$$`, "", nil, false},
		{`SELECT ?`, "", nil, false},
		{`SELECT 'open`, "", nil, false},
	} {
		key, lits, ok := ShapeOf(tc.sql)
		require.Equal(t, tc.ok, ok, tc.sql)
		if !ok {
			continue
		}
		require.Equal(t, tc.key, key, tc.sql)
		if tc.lits != nil {
			require.Equal(t, tc.lits, lits, tc.sql)
		}
		require.Equal(t, tc.sql, Render(key, lits), "render gives the statement back")
	}
}
