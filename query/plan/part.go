package plan

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
)

// Part is one part of a partitioned scan: a split of the cut of its table
// the statement was planned at.
type Part struct {
	Cut   lakestream.Cut
	Split lake.Split
}

// maxParts bounds a part's count and bucket numbers a ticket may name.
const maxParts = 1 << 16

// EncodePart writes p as text: "i/n@snapshot" and, for t$rt, ";b:hw" per
// log bucket in bucket order.
func EncodePart(p Part) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d@%d", p.Split.Index, p.Split.Count, p.Cut.Snapshot)
	if p.Cut.Log != nil {
		b.WriteString(";")
		buckets := make([]int32, 0, len(p.Cut.Log))
		for k := range p.Cut.Log {
			buckets = append(buckets, k)
		}
		sort.Slice(buckets, func(i, j int) bool { return buckets[i] < buckets[j] })
		for i, k := range buckets {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%d:%d", k, p.Cut.Log[k])
		}
	}
	return b.String()
}

// DecodePart reads EncodePart's text; anything else is an error.
func DecodePart(s string) (Part, error) {
	bad := func(why string) (Part, error) {
		return Part{}, fmt.Errorf("%w: the ticket names a part of a result flightd did not plan (%s)", engine.ErrInvalid, why)
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
	var p Part
	var err error
	if p.Split.Index, err = strconv.Atoi(is); err != nil {
		return bad("part index")
	}
	if p.Split.Count, err = strconv.Atoi(ns); err != nil {
		return bad("part count")
	}
	if p.Split.Count < 2 || p.Split.Count > maxParts || p.Split.Index < 0 || p.Split.Index >= p.Split.Count {
		return bad("part index out of range")
	}
	if p.Cut.Snapshot, err = strconv.ParseInt(snap, 10, 64); err != nil || p.Cut.Snapshot < 0 {
		return bad("snapshot")
	}
	if !hasLog {
		return p, nil
	}
	p.Cut.Log = map[int32]int64{}
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
		if _, dup := p.Cut.Log[int32(b)]; dup {
			return bad("log bucket named twice")
		}
		p.Cut.Log[int32(b)] = hw
	}
	return p, nil
}

// PartOf is the part ctx asks for (engine.WithPart), if any.
func PartOf(ctx context.Context) (*Part, error) {
	s := engine.Part(ctx)
	if s == "" {
		return nil, nil
	}
	p, err := DecodePart(s)
	if err != nil {
		return nil, err
	}
	return &p, nil
}
