package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Options is one benchmark run, as arrow-flight-benchmark's flags give it.
type Options struct {
	Streams          int   // endpoints (num_streams)
	Threads          int   // concurrent DoGet/DoPut calls (num_threads)
	RecordsPerStream int64 // records_per_stream
	RecordsPerBatch  int   // records_per_batch
	Put              bool  // test_put: DoPut instead of DoGet
}

// Result is what a run measured. Bytes count 32 a row, as the C++ tool does.
type Result struct {
	Batches, Rows, Bytes int64
	Elapsed              time.Duration
	Latencies            []time.Duration // one per batch read (Next) or written (Write), sorted
}

// MiBPerSecond is the run's speed.
func (r Result) MiBPerSecond() float64 { return float64(r.Bytes) / (1 << 20) / r.Elapsed.Seconds() }

// BatchesPerSecond is the run's throughput.
func (r Result) BatchesPerSecond() float64 { return float64(r.Batches) / r.Elapsed.Seconds() }

// Quantile returns the latency at q (0 to 1).
func (r Result) Quantile(q float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	i := int(q * float64(len(r.Latencies)-1))
	return r.Latencies[i]
}

// Mean returns the mean latency.
func (r Result) Mean() time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	var sum time.Duration
	for _, l := range r.Latencies {
		sum += l
	}
	return sum / time.Duration(len(r.Latencies))
}

// SortLatencies sorts r's latencies (after runs were added together).
func SortLatencies(r *Result) { slices.Sort(r.Latencies) }

// Ping calls the "ping" action until it succeeds, at most tries times a
// second apart, as the C++ tool does before a run.
func Ping(ctx context.Context, c flight.Client, tries int) error {
	var err error
	for i := range tries {
		if i > 0 {
			time.Sleep(time.Second)
		}
		var st flight.FlightService_DoActionClient
		if st, err = c.DoAction(ctx, &flight.Action{Type: "ping"}); err == nil {
			for err == nil {
				_, err = st.Recv()
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
		}
	}
	return fmt.Errorf("server was not available: %w", err)
}

// Run plans a flight with GetFlightInfo and streams every endpoint with
// o.Threads calls at a time.
func Run(ctx context.Context, c flight.Client, o Options) (Result, error) {
	def := Perf{StreamCount: int32(o.Streams), RecordsPerStream: o.RecordsPerStream, RecordsPerBatch: int32(o.RecordsPerBatch)}
	info, err := c.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: def.Marshal()})
	if err != nil {
		return Result{}, fmt.Errorf("GetFlightInfo: %w", err)
	}
	work := make(chan *flight.FlightEndpoint, len(info.Endpoint))
	for _, ep := range info.Endpoint {
		work <- ep
	}
	close(work)
	var mu sync.Mutex
	var res Result
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for range max(o.Threads, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ep := range work {
				var r Result
				var err error
				if o.Put {
					r, err = put(ctx, c, ep)
				} else {
					r, err = get(ctx, c, ep)
				}
				mu.Lock()
				res.Batches += r.Batches
				res.Rows += r.Rows
				res.Latencies = append(res.Latencies, r.Latencies...)
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.Bytes = res.Rows * BytesPerRow
	slices.Sort(res.Latencies)
	if firstErr != nil {
		return res, firstErr
	}
	if res.Rows != info.TotalRecords {
		return res, fmt.Errorf("%d rows moved, but the flight has %d", res.Rows, info.TotalRecords)
	}
	return res, nil
}

func get(ctx context.Context, c flight.Client, ep *flight.FlightEndpoint) (Result, error) {
	st, err := c.DoGet(ctx, ep.GetTicket())
	if err != nil {
		return Result{}, fmt.Errorf("DoGet: %w", err)
	}
	rd, err := flight.NewRecordReader(st)
	if err != nil {
		return Result{}, fmt.Errorf("DoGet: %w", err)
	}
	defer rd.Release()
	var r Result
	for t := time.Now(); rd.Next(); t = time.Now() {
		r.Latencies = append(r.Latencies, time.Since(t))
		r.Batches++
		r.Rows += rd.RecordBatch().NumRows()
	}
	if err := rd.Err(); err != nil {
		return r, fmt.Errorf("DoGet: %w", err)
	}
	return r, nil
}

func put(ctx context.Context, c flight.Client, ep *flight.FlightEndpoint) (Result, error) {
	tok, err := UnmarshalToken(ep.GetTicket().GetTicket())
	if err != nil {
		return Result{}, fmt.Errorf("the server's ticket is not a perf Token: %w", err)
	}
	st, err := c.DoPut(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("DoPut: %w", err)
	}
	w := flight.NewRecordWriter(st, ipc.WithSchema(Schema))
	var r Result
	err = eachBatch(memory.DefaultAllocator, tok, func(rec arrow.RecordBatch) error {
		t := time.Now()
		err := w.Write(rec)
		r.Latencies = append(r.Latencies, time.Since(t))
		if err == nil {
			r.Batches++
			r.Rows += rec.NumRows()
		}
		return err
	})
	if err != nil {
		return r, fmt.Errorf("DoPut: %w", err)
	}
	if err := w.Close(); err != nil {
		return r, fmt.Errorf("DoPut: %w", err)
	}
	if err := st.CloseSend(); err != nil {
		return r, fmt.Errorf("DoPut: %w", err)
	}
	for {
		if _, err := st.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return r, nil
			}
			return r, fmt.Errorf("DoPut: %w", err)
		}
	}
}
