package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkDashboard reads the Grafana dashboard at path and fails unless
// every panel queries something and every metric its PromQL expressions
// (panels and template variables) select is among the series scraped.
func checkDashboard(t *testing.T, path string, scraped map[string]float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var d struct {
		Title      string            `json:"title"`
		UID        string            `json:"uid"`
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(b, &d), path)
	require.NotEmpty(t, d.Title)
	require.NotEmpty(t, d.UID)

	var exprs []string // with where each is from
	var where []string
	var walk func(raw []json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p struct {
				Title   string            `json:"title"`
				Type    string            `json:"type"`
				Panels  []json.RawMessage `json:"panels"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			}
			require.NoError(t, json.Unmarshal(r, &p))
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Type == "text" {
				continue
			}
			require.NotEmpty(t, p.Targets, "panel %q queries nothing", p.Title)
			for _, tg := range p.Targets {
				require.NotEmpty(t, strings.TrimSpace(tg.Expr), "panel %q has a target without an expression", p.Title)
				exprs = append(exprs, tg.Expr)
				where = append(where, "panel "+p.Title)
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q string
		if json.Unmarshal(v.Query, &q) != nil {
			var o struct {
				Query string `json:"query"`
			}
			require.NoError(t, json.Unmarshal(v.Query, &o), "variable %s", v.Name)
			q = o.Query
		}
		e, err := variableExpr(q)
		require.NoError(t, err, "variable %s", v.Name)
		exprs = append(exprs, e)
		where = append(where, "variable "+v.Name)
	}
	require.GreaterOrEqual(t, len(exprs), 10, "the dashboard has few queries")

	have := map[string]bool{}
	for s := range scraped {
		name, _, _ := strings.Cut(s, "{")
		have[name] = true
	}
	var used, missing []string
	for i, e := range exprs {
		names, err := promqlMetrics(e)
		require.NoError(t, err, "%s: %s", where[i], e)
		require.NotEmpty(t, names, "%s selects no metric: %s", where[i], e)
		for _, n := range names {
			if !slices.Contains(used, n) {
				used = append(used, n)
			}
			if !have[n] {
				missing = append(missing, fmt.Sprintf("%s (%s: %s)", n, where[i], e))
			}
		}
	}
	sort.Strings(used)
	t.Logf("the dashboard reads %d metrics: %s", len(used), strings.Join(used, ", "))
	require.Empty(t, missing, "metrics the dashboard reads that the server does not export")
}

// variableExpr is the PromQL in a Grafana Prometheus variable query:
// label_values(expr, label) and query_result(expr) hold one.
func variableExpr(q string) (string, error) {
	q = strings.TrimSpace(q)
	for _, f := range []string{"label_values(", "query_result("} {
		if rest, ok := strings.CutPrefix(q, f); ok && strings.HasSuffix(rest, ")") {
			rest = rest[:len(rest)-1]
			if f == "label_values(" {
				// The label follows the last comma outside braces and parentheses.
				depth, cut := 0, -1
				for i, r := range rest {
					switch r {
					case '(', '{', '[':
						depth++
					case ')', '}', ']':
						depth--
					case ',':
						if depth == 0 {
							cut = i
						}
					}
				}
				if cut < 0 {
					return "", fmt.Errorf("label_values without a metric: %q", q)
				}
				rest = rest[:cut]
			}
			return rest, nil
		}
	}
	return "", fmt.Errorf("not a query of a metric: %q", q)
}

// promqlKeywords are PromQL's words that are not metric names: operators,
// modifiers and the special float values.
var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "atan2": true, "bool": true, "offset": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"inf": true, "nan": true,
}

// labelLists are the keywords followed by a list of label names.
var labelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

var nameMatcher = regexp.MustCompile(`__name__\s*=\s*"([^"]+)"`)

// promqlMetrics returns the metric names a PromQL expression selects, in
// order: each identifier that is not a function or aggregation (followed
// by "(", or by "by" or "without"), a keyword, a label of a by/without/on/ignoring/group list, or
// inside a label matcher {...} or range [...], and each __name__="x"
// matcher. Strings, numbers, durations, comments and Grafana's variables
// ($x, ${x}, [[x]]) are skipped.
func promqlMetrics(expr string) ([]string, error) {
	type token struct {
		kind byte // 'i' identifier, '(' ')' punctuation, 'o' anything else
		text string
	}
	var toks []token
	var out []string
	isStart := func(c byte) bool { return c == '_' || c == ':' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
	isPart := func(c byte) bool { return isStart(c) || (c >= '0' && c <= '9') }
	// skipString returns the index after the string literal at i.
	skipString := func(i int) (int, error) {
		q := expr[i]
		for j := i + 1; j < len(expr); j++ {
			switch {
			case expr[j] == '\\' && q != '`':
				j++
			case expr[j] == q:
				return j + 1, nil
			}
		}
		return 0, fmt.Errorf("unterminated string at %d", i)
	}
	// skipTo returns the index after the close that matches the open at i,
	// strings inside skipped.
	skipTo := func(i int, open, close byte) (int, error) {
		depth := 0
		for j := i; j < len(expr); j++ {
			switch c := expr[j]; {
			case c == '"' || c == '\'' || c == '`':
				k, err := skipString(j)
				if err != nil {
					return 0, err
				}
				j = k - 1
			case c == open:
				depth++
			case c == close:
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("unbalanced %c at %d", open, i)
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			j, err := skipString(i)
			if err != nil {
				return nil, err
			}
			toks, i = append(toks, token{'o', expr[i:j]}), j
		case c == '{':
			j, err := skipTo(i, '{', '}')
			if err != nil {
				return nil, err
			}
			for _, m := range nameMatcher.FindAllStringSubmatch(expr[i:j], -1) {
				out = append(out, m[1])
			}
			toks, i = append(toks, token{'o', expr[i:j]}), j
		case c == '[' && strings.HasPrefix(expr[i:], "[["):
			j := strings.Index(expr[i:], "]]")
			if j < 0 {
				return nil, fmt.Errorf("unterminated [[ at %d", i)
			}
			toks, i = append(toks, token{'o', expr[i : i+j+2]}), i+j+2
		case c == '[':
			j, err := skipTo(i, '[', ']')
			if err != nil {
				return nil, err
			}
			toks, i = append(toks, token{'o', expr[i:j]}), j
		case c == '$':
			j := i + 1
			if j < len(expr) && expr[j] == '{' {
				k := strings.IndexByte(expr[j:], '}')
				if k < 0 {
					return nil, fmt.Errorf("unterminated ${ at %d", i)
				}
				j += k + 1
			} else {
				for j < len(expr) && isPart(expr[j]) {
					j++
				}
			}
			toks, i = append(toks, token{'o', expr[i:j]}), j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(expr) && expr[i+1] >= '0' && expr[i+1] <= '9':
			j := i
			for j < len(expr) && (isPart(expr[j]) || expr[j] == '.') {
				j++
			}
			toks, i = append(toks, token{'o', expr[i:j]}), j
		case isStart(c):
			j := i
			for j < len(expr) && isPart(expr[j]) {
				j++
			}
			toks, i = append(toks, token{'i', expr[i:j]}), j
		case c == '(' || c == ')':
			toks, i = append(toks, token{c, string(c)}), i+1
		default:
			toks, i = append(toks, token{'o', string(c)}), i+1
		}
	}
	for i := 0; i < len(toks); i++ {
		tk := toks[i]
		if tk.kind != 'i' {
			continue
		}
		next, nextWord := byte(0), ""
		if i+1 < len(toks) {
			next, nextWord = toks[i+1].kind, strings.ToLower(toks[i+1].text)
		}
		word := strings.ToLower(tk.text)
		switch {
		case nextWord == "by" || nextWord == "without":
			// An aggregation with its grouping first: sum by (l) (...).
		case labelLists[word] && next == '(':
			// Skip the label names up to the list's ")".
			for i++; i < len(toks) && toks[i].kind != ')'; i++ {
			}
		case promqlKeywords[word]:
		case next == '(':
			// A function or an aggregation.
		default:
			out = append(out, tk.text)
		}
	}
	return out, nil
}

func TestPromQLMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`flightd_tiering_lag_rows`, []string{"flightd_tiering_lag_rows"}},
		{`sum by (database, table) (rate(flightd_log_rows_appended_total{instance=~"$instance", table=~"a|b"}[$__rate_interval]))`, []string{"flightd_log_rows_appended_total"}},
		{`histogram_quantile(0.99, sum(rate(flightd_rpc_duration_seconds_bucket{method=~"DoGet|GetFlightInfo"}[5m])) by (le, method))`, []string{"flightd_rpc_duration_seconds_bucket"}},
		{`max(flightd_tiering_lag_seconds) without (bucket) > 2 * on (database, table) group_left (node) flightd_tiering_freshness_seconds offset 5m`, []string{"flightd_tiering_lag_seconds", "flightd_tiering_freshness_seconds"}},
		{`{__name__="process_resident_memory_bytes", job="x"} / 1e9 + go_goroutines and bool up`, []string{"process_resident_memory_bytes", "go_goroutines", "up"}},
		{`label_replace(flightd_build_info, "v", "$1", "version", "(.*)") # flightd_not_a_metric`, []string{"flightd_build_info"}},
		{`sum(increase(flightd_tiering_rounds_failed_total[[interval]])) or vector(0)`, []string{"flightd_tiering_rounds_failed_total"}},
		{`rate(foo_total[5m:30s] @ end())`, []string{"foo_total"}},
	} {
		got, err := promqlMetrics(tc.expr)
		require.NoError(t, err, tc.expr)
		require.Equal(t, tc.want, got, tc.expr)
	}
	for _, bad := range []string{`sum(foo{a="b"`, `foo{a="b}`, `foo[5m`} {
		_, err := promqlMetrics(bad)
		require.Error(t, err, bad)
	}
	e, err := variableExpr(`label_values(flightd_tiering_lag_rows{database=~"$database"}, table)`)
	require.NoError(t, err)
	require.Equal(t, `flightd_tiering_lag_rows{database=~"$database"}`, e)
}
