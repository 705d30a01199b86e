package plan

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
	for _, p := range []Part{
		{Cut: lakestream.Cut{Snapshot: 7}, Split: lake.Split{Index: 1, Count: 3}},
		{Cut: lakestream.Cut{Snapshot: 0, Log: map[int32]int64{}}, Split: lake.Split{Index: 0, Count: 2}},
		{Cut: lakestream.Cut{Snapshot: 12, Log: map[int32]int64{0: 5, 3: 99}}, Split: lake.Split{Index: 3, Count: 4}},
	} {
		f.Add(EncodePart(p))
	}
	f.Add("1/2@3;0:1,0:2")
	f.Add("-1/2@3")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := DecodePart(s)
		if err != nil {
			return
		}
		if p.Split.Count < 2 || p.Split.Index < 0 || p.Split.Index >= p.Split.Count || p.Cut.Snapshot < 0 {
			t.Fatalf("%q decoded out of range: %+v", s, p)
		}
		q, err := DecodePart(EncodePart(p))
		if err != nil || !reflect.DeepEqual(p, q) {
			t.Fatalf("%q: %+v encodes as %q, which decodes as %+v (%v)", s, p, EncodePart(p), q, err)
		}
	})
}
