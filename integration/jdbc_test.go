package integration

// The Arrow Flight SQL JDBC driver (what DBeaver and other JDBC tools load)
// against the real server: integration/jdbc (JdbcCheck, built by `make
// jdbc-check-jar`) runs statements, prepared statements with parameters set
// one by one and in batches, metadata calls and a bad statement, and checks
// every answer itself. $JDBC_CHECK_DIR overrides where its target/ is.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

func TestJDBC(t *testing.T) {
	dir := os.Getenv("JDBC_CHECK_DIR")
	if dir == "" {
		dir = filepath.Join("jdbc", "target")
	}
	dir, err := filepath.Abs(dir)
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "jdbc-check.jar")); err != nil {
		t.Skipf("JDBC check skipped: %s/jdbc-check.jar is not built (run `make jdbc-check-jar`)", dir)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("JDBC check skipped: no `java` on PATH")
	}
	srv := testserver.Start(t, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp := filepath.Join(dir, "jdbc-check.jar") + string(os.PathListSeparator) + filepath.Join(dir, "lib", "*")
	cmd := exec.CommandContext(ctx, "java", "--add-opens=java.base/java.nio=ALL-UNNAMED", "-Duser.timezone=UTC",
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cp, "JdbcCheck", srv.Addr, "jdbc")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	out := stdout.String()
	require.NoError(t, err, "JdbcCheck:\n%s\n%s", out, stderr.String())
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Regexp(t, `^ok \d+ checks$`, lines[len(lines)-1], out)
	for _, want := range []string{"ok executeBatch rows", "ok row 1", "ok timestamp and date parameters", "ok tables"} {
		require.Contains(t, lines, want, out)
	}
}
