package lake

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/lake/paimontype"
)

// cpuTime is the process's user+system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPointLookupPK: WHERE id = k on a primary-key table of 8 columns
// and 4 buckets (LAKE_LOOKUP_ROWS rows, default 4M), written in 8 commits
// and fully compacted (one file per bucket), then an extra level-0 commit
// of 1000 updates. It reports CPU per lookup (this process, all
// goroutines) for: the files as written (current schema), the same
// files after ALTER TABLE ... SET (a new schema id), and both without
// reading the key columns first (whole row groups), with the ratios, and
// the size of the data files and the CPU of one full scan.
func BenchmarkPointLookupPK(b *testing.B) {
	ctx := context.Background()
	n := 4_000_000
	if s := os.Getenv("LAKE_LOOKUP_ROWS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	c, err := OpenCatalog(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := c.CreateDatabase(ctx, "db", false); err != nil {
		b.Fatal(err)
	}
	ty := func(s string) paimontype.DataType {
		t, err := paimontype.ParseType(s)
		if err != nil {
			b.Fatal(err)
		}
		return t
	}
	tb, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: []paimontype.Column{
		{Name: "id", Type: ty("BIGINT")}, {Name: "a", Type: ty("INT")}, {Name: "b", Type: ty("BIGINT")},
		{Name: "c", Type: ty("DOUBLE")}, {Name: "d", Type: ty("STRING")}, {Name: "e", Type: ty("STRING")},
		{Name: "f", Type: ty("DATE")}, {Name: "g", Type: ty("TIMESTAMP(3)")},
	}, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "4"}}, false)
	if err != nil {
		b.Fatal(err)
	}
	write := func(ids []int64, round int) {
		sc := tb.Schema().ArrowSchema()
		rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer rb.Release()
		for _, id := range ids {
			rb.Field(0).(*array.Int64Builder).Append(id)
			rb.Field(1).(*array.Int32Builder).Append(int32(id % 1000))
			rb.Field(2).(*array.Int64Builder).Append(id * 31)
			rb.Field(3).(*array.Float64Builder).Append(float64(id) / 7)
			rb.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("name-%d-%d", id, round))
			rb.Field(5).(*array.StringBuilder).Append("category-" + strconv.Itoa(int(id%17)))
			rb.Field(6).(*array.Date32Builder).Append(arrow.Date32(19000 + id%365))
			rb.Field(7).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000 + id))
		}
		rec := rb.NewRecordBatch()
		defer rec.Release()
		w := tb.NewWrite(ctx)
		writeByBucket(b, tb, w, rec, func(row int64) int64 { return row })
		latest, err := tb.latestSnapshotID(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: latest + 1, ExpectedLatest: latest}); err != nil {
			b.Fatal(err)
		}
	}
	const commits = 8
	for r := 0; r < commits; r++ {
		var ids []int64
		for id := int64(r); id < int64(n); id += commits {
			ids = append(ids, id)
		}
		write(ids, r)
	}
	latest, err := tb.latestSnapshotID(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tb.Compact(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: latest, MinFiles: 2}); err != nil {
		b.Fatal(err)
	}
	var upd []int64
	for i := int64(0); i < 1000; i++ {
		upd = append(upd, i*int64(n)/1000)
	}
	write(upd, commits)

	lookup := func(tb *Table, s *Snapshot, key int64) {
		rr, err := tb.Scan(ctx, s, ScanOptions{Filter: []expr.Predicate{{Column: "id", Op: expr.OpEq, Values: []any{key}}}})
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for rr.Next() {
			rec := rr.RecordBatch()
			ids := rec.Column(0).(*array.Int64)
			for i := 0; i < ids.Len(); i++ {
				if ids.Value(i) == key {
					got++
				}
			}
		}
		if err := rr.Err(); err != nil {
			b.Fatal(err)
		}
		rr.Release()
		if got != 1 {
			b.Fatalf("key %d: %d rows", key, got)
		}
	}
	measure := func(tb *Table) time.Duration {
		s, err := tb.LatestSnapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		const lookups = 300
		start, wall := cpuTime(b), time.Now()
		for i := 0; i < lookups; i++ {
			lookup(tb, s, int64(i)*7919%int64(n))
		}
		if os.Getenv("LAKE_LOOKUP_WALL") != "" {
			b.Logf("%v wall per lookup", time.Since(wall)/lookups)
		}
		return (cpuTime(b) - start) / lookups
	}
	altered := func() *Table {
		t2, err := c.AlterTableOptions(ctx, "db", "t", map[string]string{"snapshot.num-retained.max": "100"})
		if err != nil {
			b.Fatal(err)
		}
		return t2
	}
	// The table's size and a full scan, to weigh the page layout.
	snap, err := tb.LatestSnapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	entries, _, err := tb.dataFiles(ctx, snap)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, e := range entries {
		size += e.File.FileSize
	}
	start := cpuTime(b)
	rr, err := tb.Scan(ctx, snap, ScanOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for rr.Next() {
	}
	if err := rr.Err(); err != nil {
		b.Fatal(err)
	}
	rr.Release()
	fullScan := cpuTime(b) - start
	b.ResetTimer()
	for b.Loop() {
		tb0, err := c.GetTable(ctx, "db", "t")
		if err != nil {
			b.Fatal(err)
		}
		before := measure(tb0)
		t1 := altered()
		after := measure(t1)
		keyFirst = false
		beforeWhole := measure(tb0)
		afterWhole := measure(t1)
		keyFirst = true
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		b.ReportMetric(ms(before), "cpu-ms/lookup")
		b.ReportMetric(ms(after), "cpu-ms/lookup-altered")
		b.ReportMetric(ms(beforeWhole), "cpu-ms/lookup-wholegroups")
		b.ReportMetric(ms(afterWhole), "cpu-ms/lookup-altered-wholegroups")
		b.ReportMetric(float64(after)/float64(before), "altered/current")
		b.ReportMetric(float64(beforeWhole)/float64(before), "wholegroups/keyfirst")
		b.ReportMetric(float64(size)/1e6, "MB-files")
		b.ReportMetric(ms(fullScan), "cpu-ms/fullscan")
	}
}
