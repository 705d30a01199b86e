package integration

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// binary returns the flightd binary to test.
func binary(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("FLIGHTD_BIN"); b != "" {
		return b
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "flightd-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "flightd")
		cmd := exec.Command("go", "build", "-tags", "duckdb_arrow", "-o", builtBin, "github.com/flightd/flightd/cmd/flightd")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build flightd: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return builtBin
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// server is one running flightd process.
type server struct {
	t       *testing.T
	addr    string
	dataDir string
	args    []string
	cmd     *exec.Cmd
	logs    *strings.Builder
	mu      sync.Mutex
	exited  chan struct{}
}

// startServer starts flightd on a free port over dataDir.
func startServer(t *testing.T, dataDir string, extra ...string) *server {
	t.Helper()
	s := &server{t: t, addr: freePort(t), dataDir: dataDir, args: extra}
	s.start()
	t.Cleanup(func() { s.stop(syscall.SIGKILL) })
	return s
}

func (s *server) start() {
	t := s.t
	t.Helper()
	args := append([]string{"serve", "--listen", s.addr, "--data-dir", s.dataDir, "--tiering-interval", "1s", "--log-level", "debug"}, s.args...)
	cmd := exec.Command(binary(t), args...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	cmd.Stdout = os.Stdout
	require.NoError(t, cmd.Start())
	s.cmd = cmd
	s.logs = &strings.Builder{}
	s.exited = make(chan struct{})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.logs.WriteString(line + "\n")
			s.mu.Unlock()
			if strings.Contains(line, "flightd listening") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	select {
	case <-ready:
	case <-s.exited:
		t.Fatalf("flightd exited before listening:\n%s", s.log())
	case <-time.After(60 * time.Second):
		t.Fatalf("flightd did not start within 60s:\n%s", s.log())
	}
}

func (s *server) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// stop signals the process and waits for it to exit.
func (s *server) stop(sig syscall.Signal) {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		s.t.Errorf("flightd did not exit within 30s of %s:\n%s", sig, s.log())
	}
}

// restart stops the server with sig and starts it again on the same port
// and data directory.
func (s *server) restart(sig syscall.Signal) {
	s.stop(sig)
	s.start()
}

func (s *server) uri() string { return "grpc://" + s.addr }

// eventually polls f until it returns nil or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = f(); last == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("condition not met within %s: %v", timeout, last)
		case <-tick.C:
		}
	}
}
