package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The load generator runs in its own process (this test binary re-run with
// only TestLoadGenerator), so that a latency benchmark measures the server
// and not its probe waiting behind the load's goroutines in one Go
// scheduler. The machine's cores are still shared, as they would be with a
// client on the same host.

const (
	envLoadURI   = "FLIGHTD_LOADGEN_URI"
	envLoadTable = "FLIGHTD_LOADGEN_TABLE"
	envLoadRate  = "FLIGHTD_LOADGEN_RATE"
	// loadMaxRun bounds a load generator whose parent never stops it.
	loadMaxRun = 30 * time.Minute
)

// loadGen is a running load generator process.
type loadGen struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// startLoad starts ingesting into bench.<table> at rate rows/s (10k-row
// batches, one ADBC connection) in a child process.
func startLoad(b *testing.B, uri, table string, rate int) *loadGen {
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadGenerator$", "-test.bench=^$", "-test.v")
	cmd.Env = append(os.Environ(), envLoadURI+"="+uri, envLoadTable+"="+table, envLoadRate+"="+strconv.Itoa(rate))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	g := &loadGen{cmd: cmd, stdin: stdin, out: bufio.NewScanner(stdout)}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return g
}

// stop ends the load and returns the rate it reached (rows/s).
func (g *loadGen) stop(b *testing.B) float64 {
	_ = g.stdin.Close()
	rate := 0.0
	for g.out.Scan() {
		if s, ok := strings.CutPrefix(g.out.Text(), "loadgen rows/s: "); ok {
			rate, _ = strconv.ParseFloat(s, 64)
		}
	}
	if err := g.cmd.Wait(); err != nil {
		b.Fatalf("load generator: %v", err)
	}
	return rate
}

// TestLoadGenerator is the load generator process; it does nothing in a
// normal test run. It ingests until its standard input closes (or
// loadMaxRun), then prints the rate it reached.
func TestLoadGenerator(t *testing.T) {
	uri := os.Getenv(envLoadURI)
	if uri == "" {
		t.Skip("runs only as a benchmark's load generator")
	}
	rate, err := strconv.Atoi(os.Getenv(envLoadRate))
	if err != nil || rate <= 0 {
		t.Fatalf("%s: want a positive rate, got %q", envLoadRate, os.Getenv(envLoadRate))
	}
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	batch := makeBatch(0, batchRows, 7)
	defer batch.Release()
	c := open(t, uri)
	table := os.Getenv(envLoadTable)
	start := time.Now()
	deadline := time.After(loadMaxRun)
	rows := 0
loop:
	for i := 0; ; i++ {
		select {
		case <-stop:
			break loop
		case <-deadline:
			break loop
		default:
		}
		if d := time.Until(start.Add(time.Duration(float64(i*batchRows) / float64(rate) * float64(time.Second)))); d > 0 {
			time.Sleep(d)
		}
		c.ingest(t, table, batch)
		rows += batchRows
	}
	fmt.Printf("loadgen rows/s: %.0f\n", float64(rows)/time.Since(start).Seconds())
}
