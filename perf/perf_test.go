package perf

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// inner stands for the Flight SQL service: it marks what reaches it.
type inner struct {
	flight.BaseFlightServer
	puts atomic.Int32
}

func (i *inner) GetFlightInfo(context.Context, *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return &flight.FlightInfo{TotalRecords: 42}, nil
}

func (i *inner) DoGet(*flight.Ticket, flight.FlightService_DoGetServer) error {
	return status.Error(codes.NotFound, "inner DoGet")
}

func (i *inner) DoPut(st flight.FlightService_DoPutServer) error {
	i.puts.Add(1)
	for {
		if _, err := st.Recv(); err != nil {
			return nil
		}
	}
}

func (i *inner) DoAction(*flight.Action, flight.FlightService_DoActionServer) error {
	return status.Error(codes.NotFound, "inner DoAction")
}

func start(t *testing.T) (flight.Client, *inner) {
	t.Helper()
	in := &inner{}
	srv := flight.NewServerWithMiddleware(nil)
	srv.RegisterFlightService(Wrap(in, memory.DefaultAllocator))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv.InitListener(l)
	go func() { _ = srv.Serve() }()
	t.Cleanup(srv.Shutdown)
	c, err := flight.NewClientWithMiddleware(l.Addr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(2*MaxBatchBytes)))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, in
}

func TestBenchmarkProtocol(t *testing.T) {
	c, in := start(t)
	ctx := context.Background()
	require.NoError(t, Ping(ctx, c, 1))

	o := Options{Streams: 3, Threads: 2, RecordsPerStream: 10_000, RecordsPerBatch: 4096}
	for _, put := range []bool{false, true} {
		o.Put = put
		r, err := Run(ctx, c, o)
		require.NoError(t, err, "put=%v", put)
		require.EqualValues(t, 30_000, r.Rows)
		require.EqualValues(t, 9, r.Batches) // 4096 + 4096 + 1808 per stream
		require.EqualValues(t, 30_000*BytesPerRow, r.Bytes)
		require.Len(t, r.Latencies, 9)
		require.LessOrEqual(t, r.Quantile(0.5), r.Quantile(1))
	}
	require.Zero(t, in.puts.Load(), "benchmark puts never reach the Flight SQL service")

	info, err := c.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: Perf{StreamCount: 2, RecordsPerStream: 5, RecordsPerBatch: 2}.Marshal()})
	require.NoError(t, err)
	require.EqualValues(t, 10, info.TotalRecords)
	require.EqualValues(t, 10*BytesPerRow, info.TotalBytes)
	require.Len(t, info.Endpoint, 2)
	tok, err := UnmarshalToken(info.Endpoint[1].Ticket.Ticket)
	require.NoError(t, err)
	require.Equal(t, Token{Definition: Perf{StreamCount: 2, RecordsPerStream: 5, RecordsPerBatch: 2}, Start: 5, End: 10}, tok)

	_, err = c.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: Perf{StreamCount: 0, RecordsPerStream: 5, RecordsPerBatch: 2}.Marshal()})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.ErrorContains(t, err, "stream_count")
}

// TestFlightSQLPassesThrough: Flight SQL commands, tickets, puts and other
// actions reach the wrapped service.
func TestFlightSQLPassesThrough(t *testing.T) {
	c, in := start(t)
	ctx := context.Background()
	cmd, err := flightsql.CreateStatementQueryTicket([]byte("handle"))
	require.NoError(t, err)
	info, err := c.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd})
	require.NoError(t, err)
	require.EqualValues(t, 42, info.TotalRecords)

	st, err := c.DoGet(ctx, &flight.Ticket{Ticket: cmd})
	require.NoError(t, err)
	_, err = st.Recv()
	require.ErrorContains(t, err, "inner DoGet")

	as, err := c.DoAction(ctx, &flight.Action{Type: "CreatePreparedStatement"})
	require.NoError(t, err)
	_, err = as.Recv()
	require.ErrorContains(t, err, "inner DoAction")

	ps, err := c.DoPut(ctx)
	require.NoError(t, err)
	require.NoError(t, ps.Send(&flight.FlightData{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd}}))
	require.NoError(t, ps.CloseSend())
	for {
		if _, err := ps.Recv(); err != nil {
			break
		}
	}
	require.EqualValues(t, 1, in.puts.Load())
}

// TestRequestsTooLargeAreRefused: each bound answers InvalidArgument naming
// the field and the bound, before anything is allocated or streamed.
func TestRequestsTooLargeAreRefused(t *testing.T) {
	c, _ := start(t)
	ctx := context.Background()
	ok := Perf{StreamCount: 1, RecordsPerStream: 10, RecordsPerBatch: 10}
	for _, tc := range []struct {
		p     Perf
		field string
		bound int64
	}{
		{Perf{StreamCount: 1, RecordsPerStream: 10, RecordsPerBatch: 1<<31 - 1}, "records_per_batch", MaxRecordsPerBatch},
		{Perf{StreamCount: 5_000_000, RecordsPerStream: 10, RecordsPerBatch: 10}, "stream_count", MaxStreamCount},
		{Perf{StreamCount: 1, RecordsPerStream: 1 << 62, RecordsPerBatch: 10}, "records_per_stream", MaxRecordsPerStream},
	} {
		_, err := c.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: tc.p.Marshal()})
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%s: %v", tc.field, err)
		require.ErrorContains(t, err, tc.field)
		require.ErrorContains(t, err, fmt.Sprint(tc.bound))
		// A ticket made up by the client is checked the same way.
		require.Equal(t, codes.InvalidArgument, status.Code(doGet(c, Token{Definition: tc.p, Start: 0, End: 10})), tc.field)
	}
	for _, tok := range []Token{
		{Definition: ok, Start: -5, End: 5},
		{Definition: ok, Start: 0, End: 1 << 40}, // more rows than records_per_stream
		{Definition: ok, Start: 10, End: 5},
	} {
		require.Equal(t, codes.InvalidArgument, status.Code(doGet(c, tok)), "%+v", tok)
	}
	// The largest batch allowed streams.
	big := Perf{StreamCount: 1, RecordsPerStream: MaxRecordsPerBatch, RecordsPerBatch: MaxRecordsPerBatch}
	require.NoError(t, doGet(c, Token{Definition: big, Start: 0, End: MaxRecordsPerBatch}))
}

// doGet reads a ticket's stream to its end and returns its error.
func doGet(c flight.Client, tok Token) error {
	st, err := c.DoGet(context.Background(), &flight.Ticket{Ticket: tok.Marshal()})
	if err != nil {
		return err
	}
	for {
		if _, err := st.Recv(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// TestDoPutWithSchemaClaimingBillionsOfFieldsRefused: one DoPut whose
// schema message claims 2^31 fields ended the process with a fatal out of
// memory inside arrow-go; every DoPut's first message is checked before
// any reader sees it, and the server keeps serving.
func TestDoPutWithSchemaClaimingBillionsOfFieldsRefused(t *testing.T) {
	raw, err := os.ReadFile("../lakestream/testdata/fuzz/FuzzIngestBatch/schema_claims_billions_of_fields")
	require.NoError(t, err)
	lines := strings.SplitN(string(raw), "\n", 3)
	require.GreaterOrEqual(t, len(lines), 2)
	stream, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(lines[1]), "[]byte("), ")"))
	require.NoError(t, err)
	require.Equal(t, "\xff\xff\xff\xff", stream[:4])
	n := int(binary.LittleEndian.Uint32([]byte(stream[4:8])))
	meta := []byte(stream[8 : 8+n])
	c, _ := start(t)
	for _, d := range []*flight.FlightDescriptor{nil, {Type: flight.DescriptorCMD, Cmd: []byte("ingest")}} {
		st, err := c.DoPut(context.Background())
		require.NoError(t, err)
		if d != nil { // the descriptor alone first, the schema after it
			require.NoError(t, st.Send(&flight.FlightData{FlightDescriptor: d}))
		}
		require.NoError(t, st.Send(&flight.FlightData{DataHeader: meta}))
		_ = st.CloseSend()
		_, err = st.Recv()
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	}
	// The Flight SQL service may see the stream start, but never its schema.
	_, err = c.GetFlightInfo(context.Background(), &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte("x")})
	require.NoError(t, err)
}
