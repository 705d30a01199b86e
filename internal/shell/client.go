package shell

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Conn says how to reach a server.
type Conn struct {
	// Server is host:port, grpc://host:port or grpc+tls://host:port.
	Server string
	// TLS connects with TLS (as a grpc+tls:// address does).
	TLS bool
	// CAFile is a PEM file of the authority (or self-signed certificate)
	// to trust; "" trusts the system's.
	CAFile string
	// SkipVerify does not check the server's certificate.
	SkipVerify bool
	// User and Password authenticate (HTTP basic, then the server's token);
	// no User, no authentication.
	User, Password string
}

// Client is one connection to a server, with one session: its cookie
// (which holds the database USE chose) goes with every call.
type Client struct {
	cl     *flightsql.Client
	server string
	// token is the login's outgoing metadata (its bearer token), sent
	// with every call; nil without a login.
	token metadata.MD
}

// Dial connects (gRPC connects lazily: a server that is down shows at
// the first call) and logs in when c names a user.
func Dial(ctx context.Context, c Conn) (*Client, error) {
	addr := c.Server
	useTLS := c.TLS
	switch {
	case strings.HasPrefix(addr, "grpc+tls://"):
		useTLS = true
		addr = strings.TrimPrefix(addr, "grpc+tls://")
	case strings.HasPrefix(addr, "grpc://"), strings.HasPrefix(addr, "grpc+tcp://"):
		_, addr, _ = strings.Cut(addr, "://")
	}
	creds := insecure.NewCredentials()
	if useTLS || c.CAFile != "" || c.SkipVerify {
		cfg := &tls.Config{InsecureSkipVerify: c.SkipVerify} //nolint:gosec // asked for by --tls-skip-verify
		if c.CAFile != "" {
			pem, err := os.ReadFile(c.CAFile)
			if err != nil {
				return nil, fmt.Errorf("--tls-ca: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", c.CAFile)
			}
		}
		creds = credentials.NewTLS(cfg)
	}
	cl, err := flightsql.NewClient(addr, nil, []flight.ClientMiddleware{flight.NewClientCookieMiddleware()},
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", c.Server, err)
	}
	client := &Client{cl: cl, server: c.Server}
	if c.User != "" {
		auth, err := cl.Client.AuthenticateBasicToken(ctx, c.User, c.Password)
		if err != nil {
			cl.Close()
			return nil, client.describe(err)
		}
		client.token, _ = metadata.FromOutgoingContext(auth)
	}
	return client, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.cl.Close() }

// with returns ctx with the login's token attached.
func (c *Client) with(ctx context.Context) context.Context {
	if c.token == nil {
		return ctx
	}
	return metadata.NewOutgoingContext(ctx, c.token)
}

// Query runs one statement and streams its result: begin is called once
// with the result's schema and returns where its batches go; Query
// writes every batch of every endpoint there and returns the row count.
// Batches are valid only during the call that receives them.
func (c *Client) Query(ctx context.Context, sql string, begin func(*arrow.Schema) (Sink, error)) (rows int64, err error) {
	ctx = c.with(ctx)
	info, err := c.cl.Execute(ctx, sql)
	if err != nil {
		return 0, c.describe(err)
	}
	return c.read(ctx, info, begin)
}

// Sink receives a result's batches.
type Sink interface {
	Write(rec arrow.RecordBatch) error
}

// read fetches every endpoint of info in order.
func (c *Client) read(ctx context.Context, info *flight.FlightInfo, begin func(*arrow.Schema) (Sink, error)) (rows int64, err error) {
	var sink Sink
	if len(info.Endpoint) == 0 {
		sc, err := flight.DeserializeSchema(info.Schema, memory.DefaultAllocator)
		if err != nil {
			return 0, fmt.Errorf("read the result's schema: %w", err)
		}
		_, err = begin(sc)
		return 0, err
	}
	for _, ep := range info.Endpoint {
		n, err := c.readEndpoint(ctx, ep, &sink, begin)
		rows += n
		if err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// prefetch is how many batches an endpoint's reader may run ahead of
// the sink, so that the server and the network go on while a batch is
// written (encoding Parquet takes about as long as the query).
const prefetch = 4

// readEndpoint fetches one endpoint into *sink, which begin makes from
// the first endpoint's schema. A goroutine reads the stream; it retains
// each batch before handing it over and releases what it holds when the
// read is abandoned, and the sink's side releases each batch once
// written and drains the channel on every return.
func (c *Client) readEndpoint(ctx context.Context, ep *flight.FlightEndpoint, sink *Sink, begin func(*arrow.Schema) (Sink, error)) (rows int64, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rdr, err := c.cl.DoGet(ctx, ep.Ticket)
	if err != nil {
		return 0, c.describe(err)
	}
	if *sink == nil {
		if *sink, err = begin(rdr.Schema()); err != nil {
			rdr.Release()
			return 0, err
		}
	}
	batches := make(chan arrow.RecordBatch, prefetch)
	var readErr error // set before batches closes
	go func() {
		defer close(batches)
		for rdr.Next() {
			rec := rdr.RecordBatch()
			rec.Retain()
			select {
			case batches <- rec:
			case <-ctx.Done():
				rec.Release()
				return
			}
		}
		readErr = rdr.Err()
	}()
	defer func() {
		cancel() // ends a read under way
		for rec := range batches {
			rec.Release()
		}
		rdr.Release()
	}()
	for rec := range batches {
		err := (*sink).Write(rec)
		rows += rec.NumRows()
		rec.Release()
		if err != nil {
			return rows, err
		}
	}
	if readErr != nil {
		return rows, c.describe(readErr)
	}
	return rows, nil
}

// describe turns a gRPC error into "Code: message", the way the server
// words its refusals; a cancelled call is ErrCancelled.
func (c *Client) describe(err error) error {
	if errors.Is(err, context.Canceled) {
		return ErrCancelled
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Canceled:
			return ErrCancelled
		case codes.Unavailable:
			return fmt.Errorf("%s: Unavailable: %s", c.server, st.Message())
		}
		return fmt.Errorf("%s: %s", st.Code(), st.Message())
	}
	return fmt.Errorf("%s: %w", c.server, err)
}

// ErrCancelled is what a statement cancelled by the user (Ctrl-C) ends with.
var ErrCancelled = errors.New("cancelled")
