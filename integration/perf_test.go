package integration

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightd/flightd/internal/testserver"
	"github.com/flightd/flightd/perf"
)

// TestFlightBenchmarkProtocol: the real server answers Arrow's Flight
// benchmark (what bench/flightperf and arrow-flight-benchmark send) on its
// Flight SQL port, for DoGet and DoPut, and keeps serving SQL beside it.
func TestFlightBenchmarkProtocol(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir())
	c, err := flight.NewClientWithMiddleware(srv.Addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	require.NoError(t, perf.Ping(ctx, c, 3))
	for _, put := range []bool{false, true} {
		r, err := perf.Run(ctx, c, perf.Options{Streams: 3, Threads: 2, RecordsPerStream: 100_000, RecordsPerBatch: 4096, Put: put})
		require.NoError(t, err, "put=%v", put)
		require.EqualValues(t, 300_000, r.Rows)
		require.EqualValues(t, 3*25, r.Batches) // 24 full batches and one of 1696 rows per stream
	}
	require.Equal(t, "1", connect(t, srv).scalar("SELECT 1"))
}
