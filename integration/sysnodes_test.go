package integration

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// metricsAddrRe finds the address --metrics-addr 127.0.0.1:0 bound in a
// server's log.
var metricsAddrRe = regexp.MustCompile(`msg="metrics \(/metrics\)".* addr=http://(\S+)`)

func metricsAddr(t *testing.T, s *testserver.Server) string {
	t.Helper()
	m := metricsAddrRe.FindStringSubmatch(s.Log())
	require.NotNil(t, m, "no metrics address in the log:\n%s", s.Log())
	return m[1]
}

// clusterView is what one node says of the cluster: sys.nodes and the
// owner of every table in sys.tiering.
type clusterView struct {
	nodes  []string       // node_id|address|is_self|ready, by node id
	owned  map[string]int // tables_owned by node id
	owners map[string]string
}

func readClusterView(c *client) (clusterView, error) {
	v := clusterView{owned: map[string]int{}, owners: map[string]string{}}
	rows, err := c.query(`SELECT node_id, address, is_self, coalesce(ready::VARCHAR, '-'), tables_owned, last_heartbeat IS NOT NULL AND started IS NOT NULL FROM sys.nodes ORDER BY node_id`)
	if err != nil {
		return v, err
	}
	for _, r := range rows {
		v.nodes = append(v.nodes, strings.Join(r[:4], "|"))
		n, err := strconv.Atoi(r[4])
		if err != nil {
			return v, err
		}
		v.owned[r[0]] = n
		if r[5] != "true" {
			return v, fmt.Errorf("node %s: no started or last_heartbeat yet", r[0])
		}
	}
	rows, err = c.query(`SELECT DISTINCT "database" || '.' || "table", owner FROM sys.tiering ORDER BY 1`)
	if err != nil {
		return v, err
	}
	for _, r := range rows {
		v.owners[r[0]] = r[1]
	}
	return v, nil
}

// checkClusterViews: every node in nodes lists exactly ids (with their
// addresses, itself as self and ready), every table of tables has an
// owner among ids, the same on every node, and tables_owned counts them.
// It returns the owners.
func checkClusterViews(cs []*client, nodes []*testserver.Server, ids []string, tables []string) (map[string]string, error) {
	var first map[string]string
	for j, c := range cs {
		v, err := readClusterView(c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ids[j], err)
		}
		var want []string
		for i, id := range ids {
			self := i == j
			ready := "-"
			if self {
				ready = "true"
			}
			want = append(want, fmt.Sprintf("%s|%s|%t|%s", id, nodes[i].URI(), self, ready))
		}
		if !slices.Equal(v.nodes, want) {
			return nil, fmt.Errorf("sys.nodes on %s: %v, want %v", ids[j], v.nodes, want)
		}
		count := map[string]int{}
		for _, tbl := range tables {
			o, ok := v.owners[tbl]
			if !ok {
				return nil, fmt.Errorf("sys.tiering on %s has no row of %s", ids[j], tbl)
			}
			if !slices.Contains(ids, o) {
				return nil, fmt.Errorf("sys.tiering on %s: %s is owned by %q, not one of %v", ids[j], tbl, o, ids)
			}
			count[o]++
		}
		for _, id := range ids {
			if v.owned[id] != count[id] {
				return nil, fmt.Errorf("sys.nodes on %s: %s owns %d tables, sys.tiering says %d", ids[j], id, v.owned[id], count[id])
			}
		}
		if first == nil {
			first = v.owners
		} else if !maps.Equal(first, v.owners) {
			return nil, fmt.Errorf("owners differ: %s says %v, %s says %v", ids[0], first, ids[j], v.owners)
		}
	}
	return first, nil
}

// TestClusterSysNodes: three nodes list each other in sys.nodes, every
// node names the same owner for each table in sys.tiering, and each
// node's metrics carry its node label and count the tables it owns. A node
// stopped gracefully leaves: the others list two nodes and its tables get
// another owner, which tiers them.
func TestClusterSysNodes(t *testing.T) {
	t.Parallel() // waits on brokers and sessions, mostly: beside another cluster test
	nodes, _ := startNodes(t, 3, "--tiering-interval", "300ms", "--metrics-addr", "127.0.0.1:0")
	ids := []string{"n1", "n2", "n3"}
	cs := make([]*client, len(nodes))
	for i, n := range nodes {
		cs[i] = connect(t, n)
	}
	cs[0].mustExec("CREATE DATABASE cl")
	var tables []string
	for i := range 12 {
		name := fmt.Sprintf("t%02d", i)
		if i%2 == 0 {
			cs[i%3].mustExec("CREATE TABLE cl." + name + " (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
		} else {
			cs[i%3].mustExec("CREATE TABLE cl." + name + " (id BIGINT, v STRING)")
		}
		tables = append(tables, "cl."+name)
	}
	cs[1].mustExec("CREATE TABLE cl.lakeonly (id BIGINT) WITH ('lakestream.enabled' = 'false')")

	var owners map[string]string
	testserver.Eventually(t, 90*time.Second, func() error {
		var err error
		owners, err = checkClusterViews(cs, nodes, ids, tables)
		return err
	})
	owned := map[string]int{}
	for _, o := range owners {
		owned[o]++
	}
	t.Logf("tables owned: %v", owned)

	// Each node's metrics carry its id and count its tables (the owners
	// may move meanwhile: wait for the count to agree with sys.nodes).
	for i, n := range nodes {
		addr := metricsAddr(t, n)
		id := ids[i]
		testserver.Eventually(t, 30*time.Second, func() error {
			m := scrape(t, addr)
			want, err := strconv.ParseFloat(cs[i].scalar(`SELECT tables_owned FROM sys.nodes WHERE is_self`), 64)
			require.NoError(t, err)
			if got := m[fmt.Sprintf("flightd_cluster_tables_owned{node=%q}", id)]; got != want {
				return fmt.Errorf("%s: flightd_cluster_tables_owned %v, sys.nodes says %v", id, got, want)
			}
			return nil
		})
		m := scrape(t, addr)
		require.Equal(t, 1.0, m[fmt.Sprintf("flightd_cluster_ready{node=%q}", id)], id)
		require.Contains(t, m, fmt.Sprintf("flightd_tiering_lag_rows{database=\"cl\",node=%q,table=\"t00\"}", id))
		require.Contains(t, m, fmt.Sprintf("go_goroutines{node=%q}", id))
		require.True(t, slices.ContainsFunc(slices.Collect(maps.Keys(m)), func(k string) bool {
			return strings.HasPrefix(k, fmt.Sprintf("flightd_build_info{node=%q,", id))
		}), "%s: flightd_build_info with the node label", id)
		for series := range m {
			require.Contains(t, series, fmt.Sprintf("node=%q", id), "%s: a series without the node label", id)
		}
	}

	// Stop the node that owns the most tables (it owns at least one).
	victim := 0
	for i, id := range ids {
		if owned[id] > owned[ids[victim]] {
			victim = i
		}
	}
	var mine []string
	for tbl, o := range owners {
		if o == ids[victim] {
			mine = append(mine, tbl)
		}
	}
	require.NotEmpty(t, mine)
	nodes[victim].Stop(syscall.SIGTERM) // leaves the group
	var restNodes []*testserver.Server
	var restClients []*client
	var restIDs []string
	for i := range nodes {
		if i != victim {
			restNodes, restClients, restIDs = append(restNodes, nodes[i]), append(restClients, cs[i]), append(restIDs, ids[i])
		}
	}
	testserver.Eventually(t, 90*time.Second, func() error {
		var err error
		owners, err = checkClusterViews(restClients, restNodes, restIDs, tables)
		return err
	})
	t.Logf("%s owned %v; now %v", ids[victim], mine, owners)

	// The new owners tier the victim's tables.
	for i, tbl := range mine {
		restClients[i%2].mustExec(fmt.Sprintf("INSERT INTO %s VALUES (%d, 'after')", tbl, i))
	}
	testserver.Eventually(t, 60*time.Second, func() error {
		for _, tbl := range mine {
			db, name, _ := strings.Cut(tbl, ".")
			lag := restClients[0].scalar(fmt.Sprintf(`SELECT sum(lag_rows) FROM sys.tiering WHERE "database" = '%s' AND "table" = '%s'`, db, name))
			if lag != "0" {
				return fmt.Errorf("%s: %s rows not tiered by its new owner %s", tbl, lag, owners[tbl])
			}
		}
		return nil
	})
}

// TestSysNodesAlone: a server started without --node-id lists itself in
// sys.nodes, with an empty node_id and its address from --listen, owning
// every lake-stream table; sys.tiering's owner is NULL; its metrics have
// no node label and no cluster gauges.
func TestSysNodesAlone(t *testing.T) {
	t.Parallel()
	maddr := freeAddr(t)
	srv := testserver.Start(t, t.TempDir(), "--metrics-addr", maddr)
	c := connect(t, srv)
	c.mustExec("CREATE TABLE a (id BIGINT)")
	c.mustExec("CREATE TABLE b (id BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	require.Equal(t, [][]string{{"", srv.URI(), "true", "true", "NULL", "2", "true"}},
		c.mustQuery(`SELECT node_id, address, is_self, ready, last_error, tables_owned, started IS NOT NULL FROM sys.nodes`))
	require.Equal(t, [][]string{{"3", "0"}}, c.mustQuery(`SELECT count(*), count(owner) FROM sys.tiering`))
	m := scrape(t, maddr)
	require.Contains(t, m, "go_goroutines")
	require.NotContains(t, m, "flightd_cluster_ready")
	for series := range m {
		require.NotContains(t, series, "node=", series)
	}
}
