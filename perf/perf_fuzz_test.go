package perf

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
)

func samePerf(a, b Perf) bool {
	return bytes.Equal(a.Schema, b.Schema) && a.StreamCount == b.StreamCount &&
		a.RecordsPerStream == b.RecordsPerStream && a.RecordsPerBatch == b.RecordsPerBatch
}

// FuzzUnmarshalPerf: any GetFlightInfo command decodes as a Perf or fails
// with an error, and a decoded one encodes to bytes that decode the same and
// encode the same again. Any Perf encodes to bytes that decode to it.
func FuzzUnmarshalPerf(f *testing.F) {
	f.Add(Perf{StreamCount: 4, RecordsPerStream: 1 << 20, RecordsPerBatch: 4096}.Marshal(), []byte(nil), int32(1), int64(1), int32(1))
	f.Add(Perf{Schema: []byte("s"), StreamCount: -1, RecordsPerStream: -5, RecordsPerBatch: 1<<31 - 1}.Marshal(), []byte("x"), int32(-1), int64(-1), int32(1<<31-1))
	cmd, _ := flightsql.CreateStatementQueryTicket([]byte("h\x00SELECT 1"))
	f.Add(cmd, []byte{}, int32(0), int64(0), int32(0))
	f.Add([]byte{0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, []byte{}, int32(5000000), int64(1), int32(1))
	f.Fuzz(func(t *testing.T, b, schema []byte, streams int32, perStream int64, perBatch int32) {
		_ = flightSQL(b)
		if p, err := UnmarshalPerf(b); err == nil {
			enc := p.Marshal()
			back, err := UnmarshalPerf(enc)
			if err != nil || !samePerf(p, back) {
				t.Fatalf("%x decodes as %+v, which encodes to %x, which decodes as %+v (%v)", b, p, enc, back, err)
			}
			if again := back.Marshal(); !bytes.Equal(enc, again) {
				t.Fatalf("encoding not stable: %x then %x", enc, again)
			}
		}
		p := Perf{Schema: schema, StreamCount: streams, RecordsPerStream: perStream, RecordsPerBatch: perBatch}
		back, err := UnmarshalPerf(p.Marshal())
		if err != nil || !samePerf(p, back) {
			t.Fatalf("%+v encodes to bytes that decode as %+v (%v)", p, back, err)
		}
	})
}

// FuzzUnmarshalToken: any DoGet ticket decodes as a Token or fails with an
// error, and a decoded one encodes to bytes that decode the same and encode
// the same again. Any Token encodes to bytes that decode to it.
func FuzzUnmarshalToken(f *testing.F) {
	def := Perf{StreamCount: 2, RecordsPerStream: 100, RecordsPerBatch: 10}
	f.Add(Token{Definition: def, Start: 100, End: 200}.Marshal(), int64(0), int64(100))
	f.Add(Token{Definition: Perf{RecordsPerBatch: 1<<31 - 1}, Start: -1, End: 1 << 62}.Marshal(), int64(-1), int64(1<<62))
	tkt, _ := flightsql.CreateStatementQueryTicket([]byte("h\x00SELECT 1"))
	f.Add(tkt, int64(5), int64(4))
	f.Fuzz(func(t *testing.T, b []byte, start, end int64) {
		_ = flightSQL(b)
		if tok, err := UnmarshalToken(b); err == nil {
			enc := tok.Marshal()
			back, err := UnmarshalToken(enc)
			if err != nil || !samePerf(tok.Definition, back.Definition) || tok.Start != back.Start || tok.End != back.End {
				t.Fatalf("%x decodes as %+v, which encodes to %x, which decodes as %+v (%v)", b, tok, enc, back, err)
			}
			if again := back.Marshal(); !bytes.Equal(enc, again) {
				t.Fatalf("encoding not stable: %x then %x", enc, again)
			}
		}
		tok := Token{Definition: def, Start: start, End: end}
		back, err := UnmarshalToken(tok.Marshal())
		if err != nil || !samePerf(tok.Definition, back.Definition) || back.Start != start || back.End != end {
			t.Fatalf("%+v encodes to bytes that decode as %+v (%v)", tok, back, err)
		}
	})
}
