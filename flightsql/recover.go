package flightsql

import (
	"context"
	"log/slog"
	"runtime/debug"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// GRPCOptions returns the server options flightd's Flight SQL service wants:
// a bug in one call becomes that call's Internal error (logged with its
// stack) instead of ending the process.
func GRPCOptions(lg *slog.Logger) []grpc.ServerOption {
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	recovered := func(method string, p any) error {
		lg.Error("panic in call", "method", method, "panic", p, "stack", string(debug.Stack()))
		return status.Errorf(codes.Internal, "flightd: internal error in %s: %v", method, p)
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
			defer func() {
				if p := recover(); p != nil {
					err = recovered(info.FullMethod, p)
				}
			}()
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = recovered(info.FullMethod, p)
				}
			}()
			return h(srv, ss)
		}),
	}
}
