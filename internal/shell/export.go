package shell

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/util"
	"github.com/flightd/flightd/internal/resultfmt"
)

// ExportOptions configure Export.
type ExportOptions struct {
	// Format is the file's format; "" chooses by the file's extension.
	Format resultfmt.Format
	// Progress receives a progress line, redrawn as batches arrive, when
	// ProgressLine is set (a terminal), and the final count in any case.
	Progress     io.Writer
	ProgressLine bool
	// Timeout bounds the query; 0 leaves it to the server.
	Timeout time.Duration
}

// ExportResult is what an export wrote.
type ExportResult struct {
	Rows     int64
	Bytes    int64 // the file's size
	Received int64 // the result's Arrow data, as the server sent it
	Elapsed  time.Duration
}

// Export runs a query and writes its result to path batch by batch, so
// the result never has to fit in memory. It writes a temporary file
// beside path and renames it to path only once the whole result is
// written and synced: a failure (or a cancelled ctx) leaves no partial
// file, and an existing file at path is replaced only by a complete one.
func Export(ctx context.Context, c *Client, query, path string, o ExportOptions) (res ExportResult, err error) {
	f := o.Format
	if f == "" {
		var ok bool
		if f, ok = resultfmt.ForPath(path); !ok {
			return res, fmt.Errorf("%s: cannot tell the format from the file name: name one with --format (csv, tsv, json, jsonl, markdown, parquet, arrow)", path)
		}
	}
	if f == resultfmt.Table {
		return res, errors.New("--format table is for terminals; export writes csv, tsv, json, jsonl, markdown, parquet or arrow")
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	tmp, err := createTemp(path)
	if err != nil {
		return res, fmt.Errorf("create %s: %w", path, err)
	}
	start := time.Now()
	p := exportProgress{m: meter{w: o.Progress, on: o.ProgressLine, start: start}}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			p.m.clear()
		}
	}()
	counted := &countingWriter{w: tmp}
	bw := bufio.NewWriterSize(counted, 1<<20)
	var w resultfmt.Writer
	rows, err := c.Query(ctx, query, func(sc *arrow.Schema) (Sink, error) {
		var err error
		if w, err = resultfmt.New(f, bw, sc, resultfmt.Options{}); err != nil {
			return nil, err
		}
		return sinkFunc(func(rec arrow.RecordBatch) error {
			if err := w.Write(rec); err != nil {
				return fmt.Errorf("write %s: %w", path, err)
			}
			p.rows += rec.NumRows()
			p.received += util.TotalRecordSize(rec)
			p.update(counted.n)
			return nil
		}), nil
	})
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && o.Timeout > 0 {
			err = fmt.Errorf("timed out after %s (--timeout)", o.Timeout)
		}
		return res, fmt.Errorf("export to %s failed after %d rows, nothing written: %w", path, p.rows, err)
	}
	if w != nil {
		err = w.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = tmp.Close()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return res, fmt.Errorf("export to %s failed, nothing written: %w", path, err)
	}
	res = ExportResult{Rows: rows, Bytes: counted.n, Received: p.received, Elapsed: time.Since(start)}
	p.m.clear()
	fmt.Fprintf(o.Progress, "exported %d row%s (%s) to %s in %.1f s (%s rows/s, %s/s from the server)\n",
		res.Rows, plural(res.Rows), size(res.Bytes), path, res.Elapsed.Seconds(),
		count(rate(res.Rows, res.Elapsed)), size(rate(res.Received, res.Elapsed)))
	return res, nil
}

// createTemp creates path.tmp-RANDOM beside path, with the permissions
// os.Create gives (0666 less the umask; os.CreateTemp's are 0600).
func createTemp(path string) (*os.File, error) {
	for {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(path+".tmp-"+hex.EncodeToString(b[:]), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
}

// exportProgress shows "N rows (R rows/s), X MB/s from the server, Y
// written". The rate is of the result as it arrives, whatever the format
// makes of it (Parquet writes a row group only once it is complete).
type exportProgress struct {
	m        meter
	rows     int64
	received int64
}

func (p *exportProgress) update(written int64) {
	d := time.Since(p.m.start)
	p.m.draw("%d rows (%s rows/s), %s/s from the server, %s written",
		p.rows, count(rate(p.rows, d)), size(rate(p.received, d)), size(written))
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
