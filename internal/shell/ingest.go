package shell

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// ingest sends batches to db.table as one bulk-ingest stream: a DoPut of
// Flight SQL's CommandStatementIngest in append mode (a missing table is
// an error), the call ADBC's bulk ingest makes. next gives the batches,
// each valid until the next call; false ends the stream.
//
// The server acknowledges a stream once: when it has read to the end,
// it answers with the rows it wrote, all durable, then with its error if
// it stopped early (flightd writes batches in order and counts a batch
// only once it is durable). So a stream that ends because next says so
// (a bad row, Ctrl-C) is acknowledged exactly, and so is one the server
// refuses midway: known is true and acked is the count. Only a stream
// broken off (the connection lost, ctx cancelled) leaves known false:
// then some of its rows may have been written.
//
// arrow-go's Client.ExecuteIngest is not used: it returns 0 rather than
// the server's count when its reader fails, and cannot tell a count of 0
// from no count.
func (c *Client) ingest(ctx context.Context, db, table string, schema *arrow.Schema, next func() (arrow.RecordBatch, bool)) (acked int64, known bool, err error) {
	cmd := &flightsql.ExecuteIngestOpts{
		TableDefinitionOptions: &flightsql.TableDefinitionOptions{
			IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail,
			IfExists:   flightsql.TableDefinitionOptionsTableExistsOptionAppend,
		},
		Table:  table,
		Schema: &db,
	}
	var cmdAny anypb.Any
	if err := cmdAny.MarshalFrom((*pb.CommandStatementIngest)(cmd)); err != nil {
		return 0, false, err
	}
	desc, err := proto.Marshal(&cmdAny)
	if err != nil {
		return 0, false, err
	}
	stream, err := c.cl.Client.DoPut(c.with(ctx))
	if err != nil {
		return 0, false, c.describe(err)
	}
	wr := flight.NewRecordWriter(stream, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
	defer wr.Close()
	wr.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: desc})
	for {
		rec, ok := next()
		if !ok {
			break
		}
		if err := wr.Write(rec); err != nil {
			if errors.Is(err, io.EOF) {
				break // the server ended the stream: its answer says why
			}
			return 0, false, c.describe(err)
		}
	}
	if err := stream.CloseSend(); err != nil {
		return 0, false, c.describe(err)
	}
	res, err := stream.Recv()
	if err != nil {
		return 0, false, c.describe(err)
	}
	var result pb.DoPutUpdateResult
	if err := proto.Unmarshal(res.GetAppMetadata(), &result); err != nil {
		return 0, false, fmt.Errorf("the server's answer to an ingest: %w", err)
	}
	acked = result.GetRecordCount()
	for {
		// After the count, the stream ends, or gives the server's error.
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return acked, true, nil
			}
			return acked, true, c.describe(err)
		}
	}
}
