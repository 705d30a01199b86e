package sqlparse

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAtClause(t *testing.T) {
	for _, tc := range []struct {
		sql, name, at string
		start         int
		ok            bool
	}{
		{sql: "SELECT * FROM s.t AT (VERSION => 3)", start: 14, name: "s.t", at: "AT (VERSION => 3)", ok: true},
		{sql: `SELECT * FROM "my db"."t" at(timestamp => TIMESTAMP '2024-01-01 (x)') JOIN u ON true`, start: 14, name: `"my db"."t"`, at: "at(timestamp => TIMESTAMP '2024-01-01 (x)')", ok: true},
		{sql: "SELECT * FROM t AS x AT (VERSION => (1+2))", start: 14, name: "t", at: "AT (VERSION => (1+2))", ok: true},
		{sql: "SELECT * FROM t x AT (VERSION => 1)", start: 14, name: "t", at: "AT (VERSION => 1)", ok: true},
		{sql: "SELECT * FROM t", start: 14},
		{sql: "SELECT * FROM t AT (VERSION => 1", start: 14},
		{sql: "SELECT * FROM t AT VERSION", start: 14},
		{sql: "SELECT * FROM t AT (1)", start: 99},
		{sql: "SELECT * FROM t AT (1)", start: 13},
	} {
		s, ok := AtClause(tc.sql, tc.start)
		require.Equal(t, tc.ok, ok, tc.sql)
		if ok {
			require.Equal(t, tc.name, tc.sql[s.NameStart:s.NameEnd], tc.sql)
			require.Equal(t, tc.at, tc.sql[s.AtStart:s.AtEnd], tc.sql)
		}
	}
}
