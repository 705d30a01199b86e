//go:build duckdb_arrow

package query

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/sqlparse"
)

// Partitioned reads. A plain scan (fastpath.go) of a large table is planned
// as several parts, one per DoGet, which clients read in parallel (ADBC's
// partitioned reads, a distributed client's workers). Every part reads the
// same cut of the table (lakestream.Cut: one snapshot, and for t$rt the
// same log range), so together they are the rows one read would have
// returned when the statement was planned, whatever tiering or writers do
// in between. A part is a lake.Split of that cut: a primary-key table's
// part holds whole buckets, so each key merges in one part.

// DefaultPartRows is the least rows of a part by default: a smaller result
// stays one.
const DefaultPartRows = 1 << 20

// Partition implements engine.Engine.
func (e *Engine) Partition(ctx context.Context, sql string, max int) ([]string, int64, error) {
	if max < 2 || checkText(sql) != nil || sqlparse.Classify(sql) != sqlparse.KindQuery {
		return nil, -1, nil
	}
	ps, ok, err := e.plainScanOf(ctx, sql)
	if err != nil || !ok || ps.ref.whole() {
		return nil, -1, err
	}
	cut, err := e.ls.Cut(ctx, ps.ref.db, ps.ref.table, ps.ref.realtime)
	if err != nil {
		return nil, -1, mapErr(err)
	}
	rows := cut.Rows
	if len(ps.filter) > 0 {
		rows = -1
	}
	n := min(int(cut.Size/e.partRows), max)
	if cut.Buckets > 0 {
		n = min(n, cut.Buckets) // a primary-key table splits by bucket
	}
	if n < 2 {
		return nil, rows, nil
	}
	parts := make([]string, n)
	for i := range parts {
		parts[i] = encodePart(part{cut: cut, split: lake.Split{Index: i, Count: n}})
	}
	return parts, rows, nil
}

// plainScanOf is sql's plain scan, if it is one.
func (e *Engine) plainScanOf(ctx context.Context, sql string) (plainScan, bool, error) {
	c, err := e.connect(ctx)
	if err != nil {
		return plainScan{}, false, err
	}
	defer e.release(c)
	tree, parsed, err := e.parse(ctx, c, sql)
	if err != nil || !parsed {
		return plainScan{}, false, err
	}
	ps, ok := asPlainScan(tree, e.resolver(ctx))
	return ps, ok, nil
}

// part is one part of a partitioned scan.
type part struct {
	cut   lakestream.Cut
	split lake.Split
}

// maxParts bounds a part's count and bucket numbers a ticket may name.
const maxParts = 1 << 16

// encodePart writes p as text: "i/n@snapshot" and, for t$rt, ";b:hw" per
// log bucket in bucket order.
func encodePart(p part) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d@%d", p.split.Index, p.split.Count, p.cut.Snapshot)
	if p.cut.Log != nil {
		b.WriteString(";")
		buckets := make([]int32, 0, len(p.cut.Log))
		for k := range p.cut.Log {
			buckets = append(buckets, k)
		}
		sort.Slice(buckets, func(i, j int) bool { return buckets[i] < buckets[j] })
		for i, k := range buckets {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%d:%d", k, p.cut.Log[k])
		}
	}
	return b.String()
}

// decodePart reads encodePart's text; anything else is an error.
func decodePart(s string) (part, error) {
	bad := func(why string) (part, error) {
		return part{}, fmt.Errorf("%w: the ticket names a part of a result flightd did not plan (%s)", engine.ErrInvalid, why)
	}
	head, logs, hasLog := strings.Cut(s, ";")
	split, snap, ok := strings.Cut(head, "@")
	if !ok {
		return bad("no snapshot")
	}
	is, ns, ok := strings.Cut(split, "/")
	if !ok {
		return bad("no part count")
	}
	var p part
	var err error
	if p.split.Index, err = strconv.Atoi(is); err != nil {
		return bad("part index")
	}
	if p.split.Count, err = strconv.Atoi(ns); err != nil {
		return bad("part count")
	}
	if p.split.Count < 2 || p.split.Count > maxParts || p.split.Index < 0 || p.split.Index >= p.split.Count {
		return bad("part index out of range")
	}
	if p.cut.Snapshot, err = strconv.ParseInt(snap, 10, 64); err != nil || p.cut.Snapshot < 0 {
		return bad("snapshot")
	}
	if !hasLog {
		return p, nil
	}
	p.cut.Log = map[int32]int64{}
	if logs == "" {
		return p, nil
	}
	for _, kv := range strings.Split(logs, ",") {
		bs, hs, ok := strings.Cut(kv, ":")
		if !ok {
			return bad("log bucket")
		}
		b, err1 := strconv.ParseInt(bs, 10, 32)
		hw, err2 := strconv.ParseInt(hs, 10, 64)
		if err1 != nil || err2 != nil || b < 0 || b >= maxParts || hw < 0 {
			return bad("log bucket")
		}
		if _, dup := p.cut.Log[int32(b)]; dup {
			return bad("log bucket named twice")
		}
		p.cut.Log[int32(b)] = hw
	}
	return p, nil
}

// partErr is err of opening the scan of part p (nil: not a part): a cut
// that is gone (its snapshot expired since the query was planned, on this
// node or another) is ErrRejected, which tells the client to run the query
// again for new tickets, not that the server failed.
func partErr(p *part, err error) error {
	if p != nil && errors.Is(err, fs.ErrNotExist) && !errors.Is(err, engine.ErrRejected) {
		return fmt.Errorf("%w: %w", engine.ErrRejected, err)
	}
	return err
}

// partOf is the part ctx asks for, if any.
func partOf(ctx context.Context) (*part, error) {
	s := engine.Part(ctx)
	if s == "" {
		return nil, nil
	}
	p, err := decodePart(s)
	if err != nil {
		return nil, err
	}
	return &p, nil
}
