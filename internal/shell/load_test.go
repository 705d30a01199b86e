package shell

import (
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/loadfmt"
)

func TestCreateStatement(t *testing.T) {
	t.Parallel()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "ID", Type: arrow.PrimitiveTypes.Int64},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "u", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	}, nil)
	sql, cols, err := createStatement("shop", "new t", sc, []string{"id", "day"}, 8)
	require.NoError(t, err)
	require.Equal(t, `CREATE TABLE IF NOT EXISTS shop."new t" ("ID" BIGINT NOT NULL, day DATE, tags ARRAY<STRING>, u DECIMAL(20, 0), PRIMARY KEY ("ID", day) NOT ENFORCED) WITH ('bucket' = '8')`, sql)
	require.Equal(t, `"ID" BIGINT NOT NULL, day DATE, tags ARRAY<STRING>, u DECIMAL(20, 0)`, cols)

	_, _, err = createStatement("shop", "t", sc, []string{"nope"}, 0)
	require.EqualError(t, err, "--primary-key nope: no such column (the columns: ID, day, tags, u)")
	bad := arrow.NewSchema([]arrow.Field{{Name: "d", Type: arrow.FixedWidthTypes.Duration_s}}, nil)
	_, _, err = createStatement("shop", "t", bad, nil, 0)
	require.ErrorContains(t, err, `column "d": Arrow type duration[s] has no Paimon counterpart`)
}

func TestLoadErrorSaysWhatStays(t *testing.T) {
	t.Parallel()
	row := &loadfmt.Pos{File: "b.csv", Row: 9, Line: 12}
	for _, tc := range []struct {
		name string
		err  *LoadError
		want string
	}{
		{name: "a bad row", err: &LoadError{Table: "shop.t", Err: errors.New("b.csv:12: column \"x\": bad"), Acked: 1009, Next: row},
			want: "load into shop.t stopped: b.csv:12: column \"x\": bad\n1009 rows acknowledged by the server stay in shop.t: every row before b.csv:12"},
		{name: "before a file", err: &LoadError{Table: "shop.t", Err: ErrInterrupted, Acked: 1, Next: &loadfmt.Pos{File: "c.parquet"}},
			want: "load into shop.t stopped: interrupted\n1 row acknowledged by the server stay in shop.t: every row before c.parquet"},
		{name: "nothing", err: &LoadError{Table: "shop.t", Err: errors.New("boom"), Next: &loadfmt.Pos{File: "a.csv"}},
			want: "load into shop.t stopped: boom\nno row was written to shop.t"},
		{name: "a broken stream", err: &LoadError{Table: "shop.t", Err: errors.New("Unavailable"), Acked: 5, Unsure: 7, From: row},
			want: "load into shop.t stopped: Unavailable\n5 rows acknowledged by the server stay in shop.t; 7 more rows, sent in a stream that broke off before the server acknowledged it (from b.csv:12 on), may have been written too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.err.Error())
		})
	}
}

func TestETA(t *testing.T) {
	t.Parallel()
	require.Equal(t, "", eta(0, 100, time.Second))
	require.Equal(t, "0:03", eta(25, 100, time.Second))
	require.Equal(t, "1:01:00", eta(1, 62, time.Minute))
}
