package logstore

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const crashEnv = "LOGSTORE_CRASH_CHILD_DIR"

// crashPayload is the deterministic payload of part `part` of append (round, w, i).
func crashPayload(round, w, i, part, parts, size int) []byte {
	p := fmt.Appendf(nil, "r=%d w=%d i=%d part=%d/%d;", round, w, i, part, parts)
	for len(p) < size {
		p = append(p, byte('a'+(round+w+i+part+len(p))%26))
	}
	return p
}

func crashSize(rng *rand.Rand) int {
	if rng.IntN(4) == 0 {
		return 64<<10 + rng.IntN(512<<10) // value log
	}
	return 64 + rng.IntN(8<<10) // LSM tree
}

// TestCrashChild is the child half of TestCrashRecovery: it appends until killed and
// prints one line per acknowledged entry.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("child of TestCrashRecovery only")
	}
	var round int
	_, err := fmt.Sscan(os.Getenv("LOGSTORE_CRASH_ROUND"), &round)
	require.NoError(t, err)
	s, err := Open(dir, DefaultOptions())
	require.NoError(t, err)
	var outMu sync.Mutex
	fmt.Println("ready")
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
			for i := 0; ; i++ {
				parts := 1 + rng.IntN(3)
				var entries []Entry
				var sizes []int
				for part := range parts {
					size := crashSize(rng)
					sizes = append(sizes, size)
					entries = append(entries, Entry{
						Bucket:  Bucket{"crash", int32((w + part) % 3)},
						Rows:    1 + rng.Int64N(1000),
						Payload: crashPayload(round, w, i, part, parts, size),
					})
				}
				bases, err := s.Append(context.Background(), entries)
				if err != nil {
					panic(err)
				}
				var sb strings.Builder
				for part, e := range entries {
					fmt.Fprintf(&sb, "ack %d %d %d %d %d %d %d %d %d\n",
						round, w, i, part, parts, e.Bucket.Bucket, bases[part], e.Rows, sizes[part])
				}
				outMu.Lock()
				os.Stdout.WriteString(sb.String())
				outMu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// TestCrashRecovery SIGKILLs a child process that appends concurrently at a random
// moment, reopens the store, and checks that every acknowledged entry is readable with
// its payload, that the logs have no gap, and that no append is half there.
// SIGKILL keeps the page cache, so this tests Badger's recovery and our HW rules, not
// fsync against power loss.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	if os.Getenv(crashEnv) != "" {
		t.Skip("in child")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()

	type ack struct {
		round, w, i, part, parts int
		base, rows               int64
		size                     int
	}
	acks := map[int32][]ack{}
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir, fmt.Sprintf("LOGSTORE_CRASH_ROUND=%d", round))
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		sc := bufio.NewScanner(stdout)
		lines := make(chan string, 1024)
		go func() {
			defer close(lines)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		// Wait until the child has opened the store, then let it run.
		for l := range lines {
			if l == "ready" {
				break
			}
		}
		delay := time.Duration(200+rng.IntN(1000)) * time.Millisecond
		timer := time.NewTimer(delay)
		n := 0
	loop:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break loop
				}
				n += parseAck(t, l, func(a ack) { acks[int32(a.w+a.part)%3] = append(acks[int32(a.w+a.part)%3], a) }, func(f []int64) ack {
					return ack{int(f[0]), int(f[1]), int(f[2]), int(f[3]), int(f[4]), f[6], f[7], int(f[8])}
				})
			case <-timer.C:
				require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			}
		}
		err = cmd.Wait()
		require.Error(t, err, "child exited by itself: %s", stderr.String())
		t.Logf("round %d: killed after %v, %d acknowledged entries", round, delay, n)
		require.Positive(t, n, "child stderr: %s", stderr.String())

		// Reopen and check.
		s, err := Open(dir, DefaultOptions())
		require.NoError(t, err)
		ctx := context.Background()
		type key struct{ round, w, i int }
		seenParts := map[key]int{}
		wantParts := map[key]int{}
		for bk := range int32(3) {
			b := Bucket{"crash", bk}
			hw := s.HighWatermark(b)
			got := map[int64][]byte{}
			next := int64(0)
			require.NoError(t, s.Read(ctx, b, 0, hw, func(base, rows int64, p []byte) error {
				require.Equal(t, next, base, "gap in bucket %d", bk)
				next = base + rows
				got[base] = bytes.Clone(p)
				var k key
				var part, parts int
				_, err := fmt.Sscanf(string(p), "r=%d w=%d i=%d part=%d/%d;", &k.round, &k.w, &k.i, &part, &parts)
				require.NoError(t, err)
				seenParts[k]++
				wantParts[k] = parts
				return nil
			}))
			require.Equal(t, hw, next)
			for _, a := range acks[bk] {
				require.LessOrEqual(t, a.base+a.rows, hw, "acknowledged entry above HW")
				p, ok := got[a.base]
				require.True(t, ok, "acknowledged entry %+v missing", a)
				require.Equal(t, crashPayload(a.round, a.w, a.i, a.part, a.parts, a.size), p)
			}
		}
		for k, n := range seenParts {
			require.Equal(t, wantParts[k], n, "append %+v is only partly there", k)
		}
		require.NoError(t, s.Close())
	}
}

func parseAck[A any](t *testing.T, line string, add func(A), mk func([]int64) A) int {
	if !strings.HasPrefix(line, "ack ") {
		return 0
	}
	fields := strings.Fields(line)[1:]
	if len(fields) != 9 {
		return 0 // a line cut by the kill
	}
	f := make([]int64, len(fields))
	for i, s := range fields {
		if _, err := fmt.Sscan(s, &f[i]); err != nil {
			return 0
		}
	}
	add(mk(f))
	return 1
}
