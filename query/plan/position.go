package plan

import (
	"fmt"
	"strings"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/union"
)

// OffsetAfter reads _log_offset > n or >= n as "after n".
func OffsetAfter(p expr.Predicate) (int64, bool) {
	if len(p.Values) != 1 {
		return 0, false
	}
	n, ok := p.Values[0].(int64)
	if !ok {
		return 0, false
	}
	switch p.Op {
	case expr.OpGt:
		return n, true
	case expr.OpGe:
		return n - 1, true
	}
	return 0, false
}

// Position collects the per-bucket resume position of a streaming read:
// one conjunct (_bucket = b AND _log_offset > n) OR ... Pass its Take to
// ScanWith; After is then each bucket named and the offset its changes
// continue after, and Err what makes the position invalid.
type Position struct {
	After map[int32]int64
	Err   error
}

// Take takes c if it is the resume disjunction.
func (p *Position) Take(c *Object) bool {
	if c.Get("class") != "CONJUNCTION" || c.Get("type") != "CONJUNCTION_OR" {
		return false
	}
	if p.After != nil {
		p.Err = fmt.Errorf("%w: the streaming read has two resume positions (OR of _bucket = b AND _log_offset > n); give one", engine.ErrInvalid)
		return true
	}
	l, _ := c.Get("children").([]any)
	after := map[int32]int64{}
	for _, x := range l {
		xo, _ := x.(*Object)
		if xo == nil {
			return false
		}
		bucket, offset := int64(-1), int64(0)
		hasOffset := false
		for _, t := range conjuncts(xo, nil) {
			col, pr, ok := predicateOf(t)
			if !ok || len(col) != 1 {
				return false
			}
			switch {
			case strings.EqualFold(col[0], union.BucketColumn) && pr.Op == expr.OpEq:
				b, ok := pr.Values[0].(int64)
				if !ok || b < 0 || b > 1<<31-1 {
					return false
				}
				bucket = b
			case strings.EqualFold(col[0], union.LogOffsetColumn):
				n, ok := OffsetAfter(pr)
				if !ok || hasOffset {
					return false
				}
				offset, hasOffset = n, true
			default:
				return false
			}
		}
		if bucket < 0 || !hasOffset {
			return false
		}
		if _, dup := after[int32(bucket)]; dup {
			p.Err = fmt.Errorf("%w: the streaming read's resume position names bucket %d twice", engine.ErrInvalid, bucket)
			return true
		}
		after[int32(bucket)] = offset
	}
	p.After = after
	return true
}
