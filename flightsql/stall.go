package flightsql

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DefaultStallTimeout is how long a client may take no message of a call
// that streams to it before the call is ended (--stall-timeout).
const DefaultStallTimeout = time.Minute

// errStalled is the cause of a call's context that StallGuard ended.
var errStalled = errors.New("the client stopped reading")

// StallGuard returns the server option that ends a streaming call whose
// client takes no message for timeout (0: never): a DoGet whose reader
// stopped reading would otherwise hold its statement's slot, its result
// and gRPC's send buffers until --query-timeout. The call's context is
// cancelled with the cause errStalled, so the statement stops and frees
// its slot and memory at once, and the call ends with DEADLINE_EXCEEDED
// naming --stall-timeout, which the client reads if it reads again.
//
// A send blocks while the client's flow-control window is full, and gRPC
// has no way to cut a blocked send short from the server, so each stream's
// sends run on a goroutine of their own; after a stall that goroutine waits
// until gRPC ends the stream (the handler returned), holding the one
// message it was sending.
func StallGuard(timeout time.Duration) grpc.ServerOption {
	return grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if timeout <= 0 || !info.IsServerStream {
			return h(srv, ss)
		}
		ctx, cancel := context.WithCancelCause(ss.Context())
		w := &stallStream{ServerStream: ss, ctx: ctx, cancel: cancel, timeout: timeout}
		err := h(srv, w)
		cancel(nil)
		if w.sends != nil {
			close(w.sends)
		}
		if w.stalled.Load() {
			return w.stallErr()
		}
		return err
	})
}

// stallStream is a ServerStream whose sends give up after timeout.
type stallStream struct {
	grpc.ServerStream
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timeout time.Duration

	// Sends are made by the handler's goroutine, one at a time (as gRPC
	// requires), and run on sender.
	sends   chan any
	results chan error
	timer   *time.Timer
	stalled atomic.Bool
}

func (w *stallStream) Context() context.Context { return w.ctx }

func (w *stallStream) stallErr() error {
	return status.Error(codes.DeadlineExceeded, fmt.Sprintf("flightd: the client took no data for %s (--stall-timeout), so the call was ended and its statement stopped", w.timeout))
}

func (w *stallStream) SendMsg(m any) error {
	if w.stalled.Load() {
		return w.stallErr()
	}
	if w.sends == nil {
		w.sends, w.results = make(chan any), make(chan error, 1)
		w.timer = time.NewTimer(w.timeout)
		go func() {
			for m := range w.sends {
				w.results <- w.ServerStream.SendMsg(m)
			}
		}()
	} else {
		w.timer.Reset(w.timeout)
	}
	// The message is encoded here, so that the handler may reuse it once
	// SendMsg returns even when the send goes on (arrow-go's writer
	// reuses its FlightData).
	pm := new(grpc.PreparedMsg)
	if err := pm.Encode(w.ServerStream, m); err != nil {
		return err
	}
	w.sends <- pm
	select {
	case err := <-w.results:
		w.timer.Stop()
		return err
	case <-w.timer.C:
		w.stalled.Store(true)
		w.cancel(errStalled)
		return w.stallErr()
	}
}
