package perf

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/internal/ipccheck"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Perf is perf.proto's Perf: the definition of one benchmark flight.
type Perf struct {
	Schema           []byte // unused by the benchmark: the schema is fixed
	StreamCount      int32
	RecordsPerStream int64
	RecordsPerBatch  int32
}

// Token is perf.proto's Token, a DoGet ticket: rows [Start, End) of the flight.
type Token struct {
	Definition Perf
	Start, End int64
}

// Schema is the benchmark's schema: four int64 columns.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "a", Type: arrow.PrimitiveTypes.Int64},
	{Name: "b", Type: arrow.PrimitiveTypes.Int64},
	{Name: "c", Type: arrow.PrimitiveTypes.Int64},
	{Name: "d", Type: arrow.PrimitiveTypes.Int64},
}, nil)

// BytesPerRow is what the benchmark counts a row as (four int64 values).
const BytesPerRow = 32

// Marshal encodes p as perf.proto does.
func (p Perf) Marshal() []byte {
	var b []byte
	if len(p.Schema) > 0 {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, p.Schema)
	}
	b = appendVarint(b, 2, uint64(int64(p.StreamCount)))
	b = appendVarint(b, 3, uint64(p.RecordsPerStream))
	return appendVarint(b, 4, uint64(int64(p.RecordsPerBatch)))
}

// Marshal encodes t as perf.proto does.
func (t Token) Marshal() []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, t.Definition.Marshal())
	b = appendVarint(b, 2, uint64(t.Start))
	return appendVarint(b, 3, uint64(t.End))
}

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// UnmarshalPerf decodes a Perf.
func UnmarshalPerf(b []byte) (Perf, error) {
	var p Perf
	err := fields(b, func(num protowire.Number, typ protowire.Type, v uint64, bs []byte) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			p.Schema = bs
		case num == 2 && typ == protowire.VarintType:
			p.StreamCount = int32(v)
		case num == 3 && typ == protowire.VarintType:
			p.RecordsPerStream = int64(v)
		case num == 4 && typ == protowire.VarintType:
			p.RecordsPerBatch = int32(v)
		case num <= 4:
			return fmt.Errorf("field %d has wire type %d", num, typ)
		}
		return nil
	})
	return p, err
}

// UnmarshalToken decodes a Token.
func UnmarshalToken(b []byte) (Token, error) {
	var t Token
	err := fields(b, func(num protowire.Number, typ protowire.Type, v uint64, bs []byte) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			p, err := UnmarshalPerf(bs)
			t.Definition = p
			return err
		case num == 2 && typ == protowire.VarintType:
			t.Start = int64(v)
		case num == 3 && typ == protowire.VarintType:
			t.End = int64(v)
		case num <= 3:
			return fmt.Errorf("field %d has wire type %d", num, typ)
		}
		return nil
	})
	return t, err
}

// fields calls f for each field of the protobuf message b.
func fields(b []byte, f func(num protowire.Number, typ protowire.Type, v uint64, bs []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v uint64
		var bs []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			bs, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := f(num, typ, v, bs); err != nil {
			return err
		}
	}
	return nil
}

// flightSQL reports whether b is a Flight SQL command or ticket (a
// google.protobuf.Any of a Flight SQL message).
func flightSQL(b []byte) bool {
	var a anypb.Any
	return proto.Unmarshal(b, &a) == nil && strings.HasPrefix(a.GetTypeUrl(), "type.googleapis.com/arrow.flight.protocol.sql.")
}

// Bounds on a benchmark flight: one batch holds at most MaxBatchBytes
// (MaxRecordsPerBatch rows), one stream at most MaxRecordsPerStream rows
// (32 GiB, about a minute at 500 MB/s), one flight at most MaxStreamCount
// streams. Beyond them a request is InvalidArgument: a records_per_batch of
// 2^31-1 once ran the server out of memory, and a stream_count of five
// million took 12 s and 1.4 GB to answer.
const (
	MaxBatchBytes       = 64 << 20
	MaxRecordsPerBatch  = MaxBatchBytes / BytesPerRow
	MaxRecordsPerStream = 1 << 30
	MaxStreamCount      = 1024
)

// check refuses a definition the benchmark cannot stream, or that is too
// large to.
func (p Perf) check() error {
	switch {
	case p.StreamCount <= 0:
		return status.Errorf(codes.InvalidArgument, "flightd perf: stream_count must be positive, got %d", p.StreamCount)
	case p.StreamCount > MaxStreamCount:
		return status.Errorf(codes.InvalidArgument, "flightd perf: stream_count must be at most %d, got %d", MaxStreamCount, p.StreamCount)
	case p.RecordsPerStream <= 0:
		return status.Errorf(codes.InvalidArgument, "flightd perf: records_per_stream must be positive, got %d", p.RecordsPerStream)
	case p.RecordsPerStream > MaxRecordsPerStream:
		return status.Errorf(codes.InvalidArgument, "flightd perf: records_per_stream must be at most %d, got %d", MaxRecordsPerStream, p.RecordsPerStream)
	case p.RecordsPerBatch <= 0:
		return status.Errorf(codes.InvalidArgument, "flightd perf: records_per_batch must be positive, got %d", p.RecordsPerBatch)
	case p.RecordsPerBatch > MaxRecordsPerBatch:
		return status.Errorf(codes.InvalidArgument, "flightd perf: records_per_batch must be at most %d (%d bytes of %d-byte rows), got %d", MaxRecordsPerBatch, MaxBatchBytes, BytesPerRow, p.RecordsPerBatch)
	}
	return nil
}

// check refuses a ticket outside its flight's bounds.
func (t Token) check() error {
	if err := t.Definition.check(); err != nil {
		return err
	}
	switch {
	case t.Start < 0:
		return status.Errorf(codes.InvalidArgument, "flightd perf: ticket starts at %d, before 0", t.Start)
	case t.End < t.Start:
		return status.Errorf(codes.InvalidArgument, "flightd perf: ticket ends (%d) before it starts (%d)", t.End, t.Start)
	case t.End-t.Start > t.Definition.RecordsPerStream:
		return status.Errorf(codes.InvalidArgument, "flightd perf: ticket spans %d rows, more than records_per_stream (%d)", t.End-t.Start, t.Definition.RecordsPerStream)
	}
	return nil
}

// Wrap serves the benchmark protocol in front of next (see the package
// documentation).
func Wrap(next flight.FlightServer, mem memory.Allocator) flight.FlightServer {
	return &server{FlightServer: next, mem: mem}
}

type server struct {
	flight.FlightServer
	mem memory.Allocator
}

// DoAction answers "ping".
func (s *server) DoAction(a *flight.Action, st flight.FlightService_DoActionServer) error {
	if a.GetType() == "ping" {
		return st.Send(&flight.Result{Body: []byte("pong")})
	}
	return s.FlightServer.DoAction(a, st)
}

// GetFlightInfo plans a benchmark flight.
func (s *server) GetFlightInfo(ctx context.Context, d *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if d.GetType() != flight.DescriptorCMD || flightSQL(d.GetCmd()) {
		return s.FlightServer.GetFlightInfo(ctx, d)
	}
	p, err := UnmarshalPerf(d.GetCmd())
	if err != nil {
		return s.FlightServer.GetFlightInfo(ctx, d)
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(Schema, s.mem),
		FlightDescriptor: d,
		TotalRecords:     int64(p.StreamCount) * p.RecordsPerStream,
		TotalBytes:       int64(p.StreamCount) * p.RecordsPerStream * BytesPerRow,
	}
	for i := range int64(p.StreamCount) {
		t := Token{Definition: p, Start: i * p.RecordsPerStream, End: (i + 1) * p.RecordsPerStream}
		info.Endpoint = append(info.Endpoint, &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: t.Marshal()}})
	}
	return info, nil
}

// DoGet streams a benchmark ticket's rows.
func (s *server) DoGet(tkt *flight.Ticket, st flight.FlightService_DoGetServer) error {
	if flightSQL(tkt.GetTicket()) {
		return s.FlightServer.DoGet(tkt, st)
	}
	t, err := UnmarshalToken(tkt.GetTicket())
	if err != nil {
		return s.FlightServer.DoGet(tkt, st)
	}
	if err := t.check(); err != nil {
		return err
	}
	w := flight.NewRecordWriter(st, ipc.WithSchema(Schema), ipc.WithAllocator(s.mem))
	defer w.Close()
	return eachBatch(s.mem, t, w.Write)
}

// eachBatch calls f with the rows of t, records_per_batch at a time (the
// last batch holds what is left), and stops at its first error.
func eachBatch(mem memory.Allocator, t Token, f func(arrow.RecordBatch) error) error {
	batch := makeBatch(mem, int(t.Definition.RecordsPerBatch))
	defer batch.Release()
	for left := t.End - t.Start; left > 0; {
		n := min(left, batch.NumRows())
		rec := batch
		if n < batch.NumRows() {
			rec = batch.NewSlice(0, n)
		}
		err := f(rec)
		if rec != batch {
			rec.Release()
		}
		if err != nil {
			return err
		}
		left -= n
	}
	return nil
}

// makeBatch returns rows int64 rows in each of the four columns.
func makeBatch(mem memory.Allocator, rows int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, Schema)
	defer b.Release()
	vals := make([]int64, rows)
	for i := range vals {
		vals[i] = int64(i)
	}
	for c := range Schema.NumFields() {
		b.Field(c).(*array.Int64Builder).AppendValues(vals, nil)
	}
	return b.NewRecordBatch()
}

// DoPut reads and discards a stream sent with an empty descriptor.
func (s *server) DoPut(st flight.FlightService_DoPutServer) error {
	// Every DoPut (ingest, parameter values, this benchmark) passes here
	// first, before arrow-go reads the stream's schema: a schema message
	// claiming billions of fields would make it allocate them all, a fatal
	// out of memory no recover catches.
	chk := &checked{FlightService_DoPutServer: st}
	err := s.doPut(chk)
	if chk.err != nil {
		return chk.err // whatever the reader behind made of it
	}
	return err
}

func (s *server) doPut(st flight.FlightService_DoPutServer) error {
	first, err := st.Recv()
	if err != nil {
		return err
	}
	if d := first.GetFlightDescriptor(); d != nil && (len(d.GetCmd()) > 0 || len(d.GetPath()) > 0) {
		return s.FlightServer.DoPut(&replay{FlightService_DoPutServer: st, first: first})
	}
	r, err := flight.NewRecordReader(&replay{FlightService_DoPutServer: st, first: first}, ipc.WithAllocator(s.mem))
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "flightd perf: DoPut: %v", err)
	}
	defer r.Release()
	for r.Next() {
	}
	if err := r.Err(); err != nil {
		return status.Errorf(codes.InvalidArgument, "flightd perf: DoPut: %v", err)
	}
	return nil
}

// replay is a DoPut stream whose first message was already read.
// checked checks the first message of a DoPut stream that carries an IPC
// header (the schema) with ipccheck before anything reads it.
type checked struct {
	flight.FlightService_DoPutServer
	done bool
	err  error // the refusal, once made
}

func (c *checked) Recv() (*flight.FlightData, error) {
	d, err := c.FlightService_DoPutServer.Recv()
	if err != nil || c.done || len(d.GetDataHeader()) == 0 {
		return d, err
	}
	c.done = true
	if err := ipccheck.CheckSchemaMessage(d.GetDataHeader()); err != nil {
		c.err = status.Errorf(codes.InvalidArgument, "flightd: DoPut: %v", err)
		return nil, c.err
	}
	return d, nil
}

type replay struct {
	flight.FlightService_DoPutServer
	first *flight.FlightData
}

func (r *replay) Recv() (*flight.FlightData, error) {
	if f := r.first; f != nil {
		r.first = nil
		return f, nil
	}
	return r.FlightService_DoPutServer.Recv()
}
