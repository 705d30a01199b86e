package metrics

import (
	"context"
	"path"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// RPCDurationBuckets are the buckets of flightd_rpc_duration_seconds: from
// a point query's sub-millisecond calls to a bulk ingest's minutes.
var RPCDurationBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

func newRPCDuration() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "flightd_rpc_duration_seconds",
		Help:    "Time the server spent in a Flight call, from its arrival to the handler's return.",
		Buckets: RPCDurationBuckets,
	}, []string{"method", "code"})
}

// ServerOptions time every Flight call into flightd_rpc_duration_seconds,
// labelled with the Flight method (GetFlightInfo, DoGet, DoPut, ...) and
// the gRPC status code it ended with. Pass them to the gRPC server.
func (m *Metrics) ServerOptions() []grpc.ServerOption {
	observe := func(fullMethod string, start time.Time, err error) {
		m.rpc.WithLabelValues(path.Base(fullMethod), status.Code(err).String()).Observe(time.Since(start).Seconds())
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			start := time.Now()
			resp, err := h(ctx, req)
			observe(info.FullMethod, start, err)
			return resp, err
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			start := time.Now()
			err := h(srv, ss)
			observe(info.FullMethod, start, err)
			return err
		}),
	}
}
