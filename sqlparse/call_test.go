package sqlparse

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseCall(t *testing.T) {
	c, err := ParseCall("call SYS.cancel( 42 ) ;")
	require.NoError(t, err)
	require.Equal(t, Name{Database: "sys", Table: "cancel"}, c.Name)
	require.Equal(t, []CallArg{{Text: "42"}}, c.Args)
	require.Equal(t, KindCall, Classify("  CALL sys.cancel(1)"))

	c, err = ParseCall("CALL sys.rollback_to('db.t', -3)")
	require.NoError(t, err)
	require.Equal(t, []CallArg{{Text: "db.t", String: true}, {Text: "-3"}}, c.Args)

	c, err = ParseCall("CALL p()")
	require.NoError(t, err)
	require.Empty(t, c.Args)

	// Named arguments, as Paimon's documentation writes them for Flink and Spark.
	c, err = ParseCall("CALL sys.rollback_to(`table` => 'db.t', snapshot_id => 3)")
	require.NoError(t, err)
	require.Equal(t, []CallArg{{Name: "table", Text: "db.t", String: true}, {Name: "snapshot_id", Text: "3"}}, c.Args)
	c, err = ParseCall("CALL sys.expire_snapshots('db.t', RETAIN_MAX => 5, older_than => '2024-01-01 00:00:00')")
	require.NoError(t, err)
	require.Equal(t, []CallArg{{Text: "db.t", String: true}, {Name: "retain_max", Text: "5"}, {Name: "older_than", Text: "2024-01-01 00:00:00", String: true}}, c.Args)

	for _, bad := range []string{"CALL p(a => 1, 2)", "CALL p(a => 1, a => 2)", "CALL p(a = > 1)", "CALL p(a =>)", "CALL", "CALL sys.cancel", "CALL sys.cancel(1", "CALL sys.cancel(1 2)", "CALL sys.cancel(x)", "CALL sys.cancel(1); SELECT 1", "CALL a.b.c(1)", "CALL p(-'x')"} {
		_, err := ParseCall(bad)
		require.Error(t, err, bad)
	}
}
