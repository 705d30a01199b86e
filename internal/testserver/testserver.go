// Package testserver starts the real flightd binary for black-box tests and
// benchmarks: on a free loopback port, over a data directory the caller
// owns, and stopped when the test ends.
package testserver

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
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// Binary returns the flightd binary to test: $FLIGHTD_BIN, or one built
// once per process into a temporary directory.
func Binary(t testing.TB) string {
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
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// serverEnv holds, by test, the variables Setenv added to the environment
// of the servers the test starts.
var serverEnv struct {
	sync.Mutex
	byTest map[testing.TB][]string
}

// Setenv sets key=value in the environment of every server t starts from
// now on (restarts included), not in the test process's own: unlike
// t.Setenv it allows t.Parallel, so tests that give their servers
// different passwords or S3 secrets run side by side. It is undone when t
// ends.
func Setenv(t testing.TB, key, value string) {
	t.Helper()
	serverEnv.Lock()
	defer serverEnv.Unlock()
	if serverEnv.byTest == nil {
		serverEnv.byTest = map[testing.TB][]string{}
	}
	if _, ok := serverEnv.byTest[t]; !ok {
		t.Cleanup(func() {
			serverEnv.Lock()
			defer serverEnv.Unlock()
			delete(serverEnv.byTest, t)
		})
	}
	serverEnv.byTest[t] = append(serverEnv.byTest[t], key+"="+value) // a later value wins
}

// envOf is the environment of a server t starts: the process's, then what
// Setenv set for t.
func envOf(t testing.TB) []string {
	serverEnv.Lock()
	defer serverEnv.Unlock()
	extra := serverEnv.byTest[t]
	if len(extra) == 0 {
		return nil // the process's own
	}
	return append(os.Environ(), extra...)
}

// Server is one running flightd process.
type Server struct {
	t       testing.TB
	Addr    string
	DataDir string
	args    []string
	wrap    []string
	cmd     *exec.Cmd
	logs    *strings.Builder
	mu      sync.Mutex
	exited  chan struct{}
}

// Start starts flightd on a free port over dataDir with a 1s tiering
// interval; extra flags are appended (later flags win).
func Start(t testing.TB, dataDir string, extra ...string) *Server {
	t.Helper()
	s := &Server{t: t, Addr: freePort(t), DataDir: dataDir, args: extra}
	s.start()
	t.Cleanup(func() { s.Stop(syscall.SIGKILL) })
	return s
}

// StartWrapped is Start with the binary run by a wrapper command that
// execs it, such as prlimit --as=N (the process is then the server's own,
// so RSS and signals reach it).
func StartWrapped(t testing.TB, wrapper []string, dataDir string, extra ...string) *Server {
	t.Helper()
	s := &Server{t: t, Addr: freePort(t), DataDir: dataDir, args: extra, wrap: wrapper}
	s.start()
	t.Cleanup(func() { s.Stop(syscall.SIGKILL) })
	return s
}

func (s *Server) start() {
	t := s.t
	t.Helper()
	args := append([]string{"serve", "--listen", s.Addr, "--data-dir", s.DataDir, "--tiering-interval", "1s", "--log-level", "debug"}, s.args...)
	name := Binary(t)
	if len(s.wrap) > 0 {
		args = append(append(append([]string{}, s.wrap[1:]...), name), args...)
		name = s.wrap[0]
	}
	cmd := exec.Command(name, args...)
	cmd.Env = envOf(t)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = os.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
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
		t.Fatalf("flightd exited before listening:\n%s", s.Log())
	case <-time.After(60 * time.Second):
		t.Fatalf("flightd did not start within 60s:\n%s", s.Log())
	}
}

// Log returns what the server wrote to stderr so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// Stop signals the process and waits for it to exit.
func (s *Server) Stop(sig syscall.Signal) {
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
		s.t.Errorf("flightd did not exit within 30s of %s:\n%s", sig, s.Log())
	}
}

// Exited reports whether the process has exited.
func (s *Server) Exited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// Restart stops the server with sig and starts it again on the same port
// and data directory.
func (s *Server) Restart(sig syscall.Signal) {
	s.Stop(sig)
	s.start()
}

// RestartWith is Restart with extra flags appended to those the server
// started with (later flags win).
func (s *Server) RestartWith(sig syscall.Signal, extra ...string) {
	s.Stop(sig)
	s.args = append(append([]string{}, s.args...), extra...)
	s.start()
}

// URI is the ADBC / Flight URI of the server.
func (s *Server) URI() string { return "grpc://" + s.Addr }

// Eventually polls f until it returns nil or the deadline passes.
func Eventually(t testing.TB, timeout time.Duration, f func() error) {
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

// RSS returns the server process's resident anonymous memory in bytes
// (Linux RssAnon: heap and stacks, not the pages of memory-mapped files,
// which Badger uses for its logs and the kernel can reclaim).
func (s *Server) RSS() int64 {
	b := s.procFile("status")
	if b == nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "RssAnon:") {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "RssAnon:")), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}

// PID returns the server process's id (0 when it is not running).
func (s *Server) PID() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// HWM returns the server process's peak resident memory (Linux VmHWM:
// anonymous and file-backed pages) since it started or since ResetHWM.
func (s *Server) HWM() int64 {
	b := s.procFile("status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}

// ResetHWM resets the server's VmHWM to its current resident memory
// (writing 5 to /proc/<pid>/clear_refs).
func (s *Server) ResetHWM() error {
	pid := s.PID()
	if pid == 0 {
		return fmt.Errorf("testserver: not running")
	}
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// CPUSeconds returns the CPU time (user and system, all threads) the server
// process has used so far, from /proc/<pid>/stat; 0 where that is not
// available. A difference of two readings over a measured stretch is how
// many core-seconds that stretch cost, a far steadier measure than latency
// on a shared machine.
func (s *Server) CPUSeconds() float64 {
	b := s.procFile("stat")
	if b == nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14 and stime 15 (clock ticks).
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	var utime, stime int64
	fmt.Sscanf(f[11], "%d", &utime)
	fmt.Sscanf(f[12], "%d", &stime)
	return float64(utime+stime) / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// procFile reads /proc/<pid>/<name> of the server process; nil when there
// is none (no process, not Linux).
func (s *Server) procFile(name string) []byte {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", s.cmd.Process.Pid, name))
	if err != nil {
		return nil
	}
	return b
}
