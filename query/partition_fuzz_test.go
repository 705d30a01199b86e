//go:build duckdb_arrow

package query

import (
	"reflect"
	"testing"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
)

// FuzzPart: a ticket's part, which a client may forge, decodes or is
// refused without panicking; what decodes is in range and encodes to text
// that decodes the same.
func FuzzPart(f *testing.F) {
	for _, p := range []part{
		{cut: lakestream.Cut{Snapshot: 7}, split: lake.Split{Index: 1, Count: 3}},
		{cut: lakestream.Cut{Snapshot: 0, Log: map[int32]int64{}}, split: lake.Split{Index: 0, Count: 2}},
		{cut: lakestream.Cut{Snapshot: 12, Log: map[int32]int64{0: 5, 3: 99}}, split: lake.Split{Index: 3, Count: 4}},
	} {
		f.Add(encodePart(p))
	}
	f.Add("1/2@3;0:1,0:2")
	f.Add("-1/2@3")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := decodePart(s)
		if err != nil {
			return
		}
		if p.split.Count < 2 || p.split.Index < 0 || p.split.Index >= p.split.Count || p.cut.Snapshot < 0 {
			t.Fatalf("%q decoded out of range: %+v", s, p)
		}
		q, err := decodePart(encodePart(p))
		if err != nil || !reflect.DeepEqual(p, q) {
			t.Fatalf("%q: %+v encodes as %q, which decodes as %+v (%v)", s, p, encodePart(p), q, err)
		}
	})
}
