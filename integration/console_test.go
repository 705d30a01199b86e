package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// browser returns the Chromium (or Chrome) to drive, or skips the test
// when there is none; under make test (FLIGHTD_REQUIRE_BROWSER=1) a missing
// browser fails it.
func browser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no Chromium on PATH: `make browser` installs it (make test does)"
	if os.Getenv("FLIGHTD_REQUIRE_BROWSER") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// authClient is an ADBC connection that logs in with user and password.
func authClient(t *testing.T, srv *testserver.Server, user, password string) *client {
	t.Helper()
	db, err := newDriver().NewDatabase(map[string]string{adbc.OptionKeyURI: srv.URI(), adbc.OptionKeyUsername: user, adbc.OptionKeyPassword: password})
	require.NoError(t, err)
	conn, err := db.Open(context.Background())
	require.NoError(t, err)
	c := &client{t: t, db: db, conn: conn}
	t.Cleanup(c.close)
	return c
}

// TestOperatorsPage runs one server with a password and --metrics-addr.
// The operator's page refuses requests without the Flight port's
// credentials; in a real browser it shows a table's rows, lists a running
// statement, and its cancel button ends the statement, whose client gets
// CANCELLED, and the server logs who did it. The Grafana dashboard's
// metrics are checked against the same server's /metrics.
func TestOperatorsPage(t *testing.T) {
	t.Parallel()
	const user, password = "ops", "pa ss:word"
	maddr := freeAddr(t)
	testserver.Setenv(t, "FLIGHTD_AUTH_PASSWORD", password)
	srv := testserver.Start(t, t.TempDir(),
		"--auth-user", user, "--metrics-addr", maddr, "--log-disk-budget", "1GiB")
	c := authClient(t, srv, user, password)
	c.mustExec("CREATE DATABASE ops")
	c.mustExec("CREATE TABLE ops.events (id BIGINT, v BIGINT)")
	const rows = 1234
	idv := make([]int64, rows)
	for i := range idv {
		idv[i] = int64(i)
	}
	rec := kvBatch(idv, idv)
	_, err := c.ingest("ops", "events", adbc.OptionValueIngestModeAppend, rec)
	rec.Release()
	require.NoError(t, err)

	t.Run("refused without credentials", func(t *testing.T) {
		get := func(path string, set func(*http.Request)) *http.Response {
			req, err := http.NewRequest("GET", "http://"+maddr+path, nil)
			require.NoError(t, err)
			if set != nil {
				set(req)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			return resp
		}
		for _, path := range []string{"/ui/", "/ui/app.js", "/ui/api/state"} {
			resp := get(path, nil)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, path)
			require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Basic", path)
			resp = get(path, func(r *http.Request) { r.SetBasicAuth(user, "wrong") })
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, path)
		}
		resp, err := http.Post("http://"+maddr+"/ui/api/cancel", "application/json", strings.NewReader(`{"id":1}`))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		resp = get("/ui/api/state", func(r *http.Request) { r.SetBasicAuth(user, password) })
		require.Equal(t, http.StatusOK, resp.StatusCode)
		resp = get("/", func(r *http.Request) { r.SetBasicAuth(user, password) })
		require.Equal(t, http.StatusOK, resp.StatusCode, "/ leads to the page")
		require.Equal(t, "/ui/", resp.Request.URL.Path)
	})

	t.Run("browser", func(t *testing.T) {
		chrome := browser(t)
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Flag("window-size", "1400,900"))...)
		defer cancelAlloc()
		bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
		defer cancelBrowser()
		// The first Run starts the browser and lives as long as bctx;
		// each later step is bounded on its own.
		_, err := chromedp.Run(bctx, chromedp.Title())
		require.NoError(t, err)
		// status is the page's status line: what its last poll did.
		status := func() string {
			ctx, cancel := context.WithTimeout(bctx, 5*time.Second)
			defer cancel()
			s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS("#status")))
			if err != nil {
				return err.Error()
			}
			return s
		}
		step := func(steps ...chromedp.Action[chromedp.Void]) {
			t.Helper()
			ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
			defer cancel()
			if err := chromedp.Do(ctx, steps...); err != nil {
				t.Fatalf("%v; the page says: %s", err, status())
			}
		}

		// Opened with the credentials in its address, as an operator may
		// open it: the page's requests must leave them out of their URLs
		// (fetch refuses such a URL) and the browser sends them.
		page := url.URL{Scheme: "http", User: url.UserPassword(user, password), Host: maddr, Path: "/ui/"}
		step(chromedp.Navigate(page.String()),
			chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#tables tr[data-table="ops.events"] td[data-col="rows"][data-value="%d"]`, rows))))
		ctx, cancel := context.WithTimeout(bctx, time.Minute)
		shown, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#tables tr[data-table="ops.events"] td[data-col="rows"]`)))
		cancel()
		require.NoError(t, err)
		require.Equal(t, "1,234", shown)

		// A statement that would run for hours.
		const long = "SELECT sum(a.range * b.range) FROM range(10000000) a, range(10000000) b"
		errc := make(chan error, 1)
		go func() {
			_, err := c.query(long)
			errc <- err
		}()
		running := `#statements tr[data-state="running"][data-kind="query"]`
		step(chromedp.WaitVisible(chromedp.CSS(running + ` button.cancel`)))
		ctx, cancel = context.WithTimeout(bctx, time.Minute)
		sql, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(running+` td.sql`)))
		require.NoError(t, err)
		id, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(running), "data-id"))
		cancel()
		require.NoError(t, err)
		require.Equal(t, long, sql)
		require.True(t, id.Exists)
		row := fmt.Sprintf(`#statements tr[data-id="%s"]`, id.Value)

		// Cancel, then confirm.
		step(chromedp.Click(chromedp.CSS(row+` button.cancel`)),
			chromedp.WaitVisible(chromedp.CSS(row+` button.cancel.confirm`)),
			chromedp.Click(chromedp.CSS(row+` button.cancel.confirm`)))
		select {
		case err := <-errc:
			require.Error(t, err, "the statement was not cancelled")
			require.Contains(t, err.Error(), "Cancel")
			require.Contains(t, err.Error(), "cancelled by an operator")
		case <-time.After(time.Minute):
			t.Fatal("the client's statement still runs a minute after the cancel")
		}
		step(chromedp.WaitNotPresent(chromedp.CSS(row)))
		ctx, cancel = context.WithTimeout(bctx, time.Minute)
		notice, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#notice`)))
		cancel()
		require.NoError(t, err)
		require.Equal(t, "Statement "+id.Value+" cancelled.", notice)
		testserver.Eventually(t, 10*time.Second, func() error {
			for line := range strings.SplitSeq(srv.Log(), "\n") {
				if strings.Contains(line, "statement cancelled from the operator's page") && strings.Contains(line, "id="+id.Value+" ") &&
					strings.Contains(line, "by="+user) && strings.Contains(line, "range(10000000)") {
					return nil
				}
			}
			return fmt.Errorf("the server did not log the cancel of statement %s", id.Value)
		})
	})

	t.Run("dashboard", func(t *testing.T) {
		// Every series the dashboard reads exists once a round has run.
		testserver.Eventually(t, time.Minute, func() error {
			if n := scrape(t, maddr)[series("flightd_tiering_rounds_committed_total", "ops", "events")]; n < 1 {
				return fmt.Errorf("%v tiering rounds committed", n)
			}
			return nil
		})
		checkDashboard(t, "../docs/grafana/flightd.json", scrape(t, maddr))
	})
}
