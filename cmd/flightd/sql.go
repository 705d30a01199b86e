package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// maxPrintRows bounds what `flightd sql` prints; the rest is counted.
const maxPrintRows = 1000

func sqlCmd(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sql", flag.ContinueOnError)
	server := fs.String("server", envOr("FLIGHTD_LISTEN", "127.0.0.1:31337"), "flightd address: host:port, or grpc://host:port, grpc+tls://host:port (env FLIGHTD_LISTEN)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	useTLS := fs.Bool("tls", false, "connect with TLS (as a grpc+tls:// server address does)")
	caFile := fs.String("tls-ca", "", "PEM file of the certificate authority (or the self-signed certificate) to trust; default: the system's")
	skipVerify := fs.Bool("tls-skip-verify", false, "do not check the server's certificate (testing only)")
	user := fs.String("user", os.Getenv("FLIGHTD_USER"), "user name to authenticate as; the password comes from FLIGHTD_PASSWORD (env FLIGHTD_USER)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	addr := *server
	switch {
	case strings.HasPrefix(addr, "grpc+tls://"):
		*useTLS = true
		addr = strings.TrimPrefix(addr, "grpc+tls://")
	case strings.HasPrefix(addr, "grpc://"), strings.HasPrefix(addr, "grpc+tcp://"):
		_, addr, _ = strings.Cut(addr, "://")
	}
	creds := insecure.NewCredentials()
	if *useTLS || *caFile != "" || *skipVerify {
		cfg := &tls.Config{InsecureSkipVerify: *skipVerify} //nolint:gosec // asked for by --tls-skip-verify
		if *caFile != "" {
			pem, err := os.ReadFile(*caFile)
			if err != nil {
				return fmt.Errorf("--tls-ca: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return fmt.Errorf("--tls-ca %s: no PEM certificate in it", *caFile)
			}
		}
		creds = credentials.NewTLS(cfg)
	}
	query := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if query == "" || query == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		query = strings.TrimSpace(string(b))
	}
	if query == "" {
		return errors.New(`sql: no statement given; usage: flightd sql "SELECT ..."`)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	cl, err := flightsql.NewClient(addr, nil, nil,
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", *server, err)
	}
	defer cl.Close()
	if *user != "" {
		if ctx, err = cl.Client.AuthenticateBasicToken(ctx, *user, os.Getenv("FLIGHTD_PASSWORD")); err != nil {
			return describe(err, *server)
		}
	}
	info, err := cl.Execute(ctx, query)
	if err != nil {
		return describe(err, *server)
	}
	var cols []string
	var rows [][]string
	var total int64
	for _, ep := range info.Endpoint {
		rdr, err := cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			return describe(err, *server)
		}
		sc := rdr.Schema()
		if cols == nil {
			for _, f := range sc.Fields() {
				cols = append(cols, f.Name)
			}
		}
		for rdr.Next() {
			rec := rdr.RecordBatch()
			for i := 0; i < int(rec.NumRows()); i++ {
				total++
				if len(rows) < maxPrintRows {
					rows = append(rows, rowStrings(rec, i))
				}
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return describe(err, *server)
		}
	}
	printTable(out, cols, rows)
	if total > int64(len(rows)) {
		fmt.Fprintf(out, "(%d rows, first %d shown)\n", total, len(rows))
	} else {
		fmt.Fprintf(out, "(%d row%s)\n", total, plural(total))
	}
	return nil
}

func describe(err error, server string) error {
	if st, ok := status.FromError(err); ok {
		return fmt.Errorf("%s: %s", st.Code(), st.Message())
	}
	return fmt.Errorf("%s: %w", server, err)
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func rowStrings(rec arrow.RecordBatch, i int) []string {
	out := make([]string, rec.NumCols())
	for c := range out {
		col := rec.Column(c)
		if col.IsNull(i) {
			out[c] = "NULL"
			continue
		}
		out[c] = col.ValueStr(i)
	}
	return out
}

func printTable(out io.Writer, cols []string, rows [][]string) {
	w := make([]int, len(cols))
	for i, c := range cols {
		w[i] = utf8.RuneCountInString(c)
	}
	for _, r := range rows {
		for i, v := range r {
			if n := utf8.RuneCountInString(v); n > w[i] {
				w[i] = n
			}
		}
	}
	line := func(vals []string) {
		var b strings.Builder
		for i, v := range vals {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(v)
			b.WriteString(strings.Repeat(" ", w[i]-utf8.RuneCountInString(v)))
		}
		fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
	}
	line(cols)
	sep := make([]string, len(cols))
	for i := range sep {
		sep[i] = strings.Repeat("-", w[i])
	}
	fmt.Fprintln(out, strings.Join(sep, "-+-"))
	for _, r := range rows {
		line(r)
	}
}
