package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// paimonReader is integration/paimon/read_snapshot.py running under the
// pypaimon virtualenv's Python ($FLIGHTD_PAIMON_PYTHON, which make
// test-integration sets): it reads one snapshot of a Paimon table per
// request, so Python and pypaimon start once per test.
type paimonReader struct {
	// options are catalog options sent with every read (an S3
	// warehouse's endpoint and keys: fs.s3.endpoint, ...).
	options map[string]string
	cmd     *exec.Cmd
	in      io.WriteCloser
	dec     *json.Decoder
	stderr  *lockedBuffer
}

// paimonTimeout bounds one read (the crash test's append table grows to
// about a million rows in a few hundred files).
const paimonTimeout = 2 * time.Minute

// startPaimonReader starts the reader, or returns nil (and says so in the
// test log) when FLIGHTD_PAIMON_PYTHON is not set.
func startPaimonReader(t *testing.T) *paimonReader {
	t.Helper()
	py := os.Getenv("FLIGHTD_PAIMON_PYTHON")
	if py == "" {
		t.Log("FLIGHTD_PAIMON_PYTHON is not set: the snapshots are NOT checked with pypaimon " +
			"(make test-integration sets it to the pypaimon virtualenv's python)")
		return nil
	}
	p := &paimonReader{cmd: exec.Command(py, "paimon/read_snapshot.py"), stderr: &lockedBuffer{}}
	p.cmd.Stderr = p.stderr
	var err error
	p.in, err = p.cmd.StdinPipe()
	require.NoError(t, err)
	out, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	p.dec = json.NewDecoder(out)
	p.dec.UseNumber()
	require.NoError(t, p.cmd.Start(), "start %s paimon/read_snapshot.py", py)
	t.Cleanup(func() {
		p.in.Close()
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
	})
	return p
}

// paimonAnswer is one answer of read_snapshot.py.
type paimonAnswer struct {
	Snapshot int64           `json:"snapshot"`
	Columns  json.RawMessage `json:"columns"` // names (rows mode) or per-column summaries
	Rows     [][]any         `json:"rows"`
	Count    json.Number     `json:"count"`
	IPC      string          `json:"ipc"` // mode "ipc": the rows as a base64 Arrow IPC stream
	Error    string          `json:"error"`
}

// read asks for table (db.name) as of snapshot; mode is "rows", "summary" or "ipc".
func (p *paimonReader) read(warehouse, table string, snapshot int64, mode string) (*paimonAnswer, error) {
	req, _ := json.Marshal(map[string]any{"warehouse": warehouse, "table": table, "snapshot": snapshot, "mode": mode, "options": p.options})
	if _, err := p.in.Write(append(req, '\n')); err != nil {
		return nil, fmt.Errorf("pypaimon reader: %w\n%s", err, p.stderr)
	}
	ans := &paimonAnswer{}
	done := make(chan error, 1)
	go func() { done <- p.dec.Decode(ans) }()
	select {
	case err := <-done:
		if err != nil {
			return nil, fmt.Errorf("pypaimon reader: %w\n%s", err, p.stderr)
		}
	case <-time.After(paimonTimeout):
		_ = p.cmd.Process.Kill()
		return nil, fmt.Errorf("pypaimon reader: no answer within %s for %s snapshot %d\n%s", paimonTimeout, table, snapshot, p.stderr)
	}
	if ans.Error != "" {
		return nil, fmt.Errorf("pypaimon cannot read %s snapshot %d:\n%s", table, snapshot, ans.Error)
	}
	if ans.Snapshot != snapshot {
		return nil, fmt.Errorf("pypaimon read snapshot %d of %s, not %d", ans.Snapshot, table, snapshot)
	}
	return ans, nil
}

// sortedRows renders the rows like client.query and sortedRows do.
func (a *paimonAnswer) sortedRows() []string {
	out := make([]string, len(a.Rows))
	for i, r := range a.Rows {
		cells := make([]string, len(r))
		for j, v := range r {
			if v == nil {
				cells[j] = "NULL"
			} else {
				cells[j] = fmt.Sprint(v)
			}
		}
		out[i] = strings.Join(cells, "|")
	}
	sort.Strings(out)
	return out
}

// summary renders a summary answer as count, then sum, min, max and
// distinct count of each of cols.
func (a *paimonAnswer) summary(cols ...string) ([]string, error) {
	var per map[string]map[string]any
	dec := json.NewDecoder(bytes.NewReader(a.Columns))
	dec.UseNumber()
	if err := dec.Decode(&per); err != nil {
		return nil, fmt.Errorf("summary columns %s: %w", a.Columns, err)
	}
	out := []string{a.Count.String()}
	for _, c := range cols {
		s, ok := per[c]
		if !ok {
			return nil, fmt.Errorf("summary has no column %q: %s", c, a.Columns)
		}
		for _, k := range []string{"sum", "min", "max", "distinct"} {
			if s[k] == nil {
				out = append(out, "NULL")
			} else {
				out = append(out, fmt.Sprint(s[k]))
			}
		}
	}
	return out, nil
}

// lockedBuffer collects a child's stderr while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
