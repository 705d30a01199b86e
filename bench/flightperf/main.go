// Command flightperf is a Go port of Arrow's C++ arrow-flight-benchmark
// against a running server that speaks the Flight benchmark protocol
// (flightd does, beside Flight SQL: package perf). It takes the C++ tool's
// flags and prints its lines, so numbers compare:
//
//	go run ./bench/flightperf -server_port 31337 [-test_put] [-num_streams 4] [-num_threads 4]
//	    [-records_per_stream 10000000] [-records_per_batch 4096] [-num_perf_runs 1]
//
// Unlike the C++ tool it never spawns a server (-server_host defaults to
// 127.0.0.1), and it can log in (-user, password from FLIGHTD_PASSWORD) and
// use TLS (-tls, -tls_skip_verify) for a server that requires them.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightd/flightd/perf"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "flightperf:", err)
		os.Exit(1)
	}
}

func run() error {
	host := flag.String("server_host", "127.0.0.1", "server host")
	port := flag.Int("server_port", 31337, "server port")
	runs := flag.Int("num_perf_runs", 1, "number of runs (the results are of all of them)")
	streams := flag.Int("num_streams", 4, "endpoints of the flight")
	threads := flag.Int("num_threads", 4, "concurrent DoGet or DoPut calls")
	perStream := flag.Int64("records_per_stream", 10_000_000, "rows per endpoint")
	perBatch := flag.Int("records_per_batch", 4096, "rows per record batch")
	testPut := flag.Bool("test_put", false, "measure DoPut instead of DoGet")
	useTLS := flag.Bool("tls", false, "connect with TLS")
	skipVerify := flag.Bool("tls_skip_verify", false, "with -tls, do not check the server's certificate")
	user := flag.String("user", "", "log in as this user; the password comes from FLIGHTD_PASSWORD")
	flag.Parse()

	creds := insecure.NewCredentials()
	if *useTLS {
		creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: *skipVerify}) //nolint:gosec // asked for by -tls_skip_verify
	}
	addr := net.JoinHostPort(*host, strconv.Itoa(*port))
	c, err := flight.NewClientWithMiddleware(addr, nil, nil, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := context.Background()
	if *user != "" {
		if ctx, err = c.AuthenticateBasicToken(ctx, *user, os.Getenv("FLIGHTD_PASSWORD")); err != nil {
			return fmt.Errorf("log in: %w", err)
		}
	}
	if err := perf.Ping(ctx, c, 10); err != nil {
		return err
	}
	method, verb := "DoGet", "read"
	if *testPut {
		method, verb = "DoPut", "written"
	}
	fmt.Println("Testing method:", method)
	fmt.Println("Using standalone TCP server")
	fmt.Println("Server host:", *host)
	fmt.Println("Server port:", *port)
	o := perf.Options{Streams: *streams, Threads: *threads, RecordsPerStream: *perStream, RecordsPerBatch: *perBatch, Put: *testPut}
	var all perf.Result
	for range *runs {
		r, err := perf.Run(ctx, c, o)
		if err != nil {
			return err
		}
		all.Batches += r.Batches
		all.Rows += r.Rows
		all.Bytes += r.Bytes
		all.Elapsed += r.Elapsed
		all.Latencies = append(all.Latencies, r.Latencies...)
	}
	perf.SortLatencies(&all)
	fmt.Println("Number of perf runs:", *runs)
	fmt.Println("Number of concurrent gets/puts:", *threads)
	fmt.Println("Batch size:", *perBatch*perf.BytesPerRow)
	fmt.Printf("Batches %s: %d\n", verb, all.Batches)
	fmt.Printf("Bytes %s: %d\n", verb, all.Bytes)
	fmt.Println("Nanos:", all.Elapsed.Nanoseconds())
	fmt.Printf("Speed: %.3f MB/s\n", all.MiBPerSecond())
	fmt.Printf("Throughput: %.3f batches/s\n", all.BatchesPerSecond())
	fmt.Printf("Latency mean: %d us\n", all.Mean().Microseconds())
	for _, q := range []float64{0.5, 0.95, 0.99} {
		fmt.Printf("Latency quantile=%.2f: %d us\n", q, all.Quantile(q).Microseconds())
	}
	fmt.Printf("Latency max: %d us\n", all.Quantile(1).Microseconds())
	return nil
}
