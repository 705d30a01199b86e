package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testkafka"
	"github.com/flightd/flightd/internal/testserver"
)

// TestKafkaClusterBrokerKilledUnderLoad: three brokers, replication factor
// 3 (min.insync.replicas 2); writers insert all the time while one broker
// is killed (its partitions' leaders move) and started again. Every
// acknowledged row is in t$rt and, after tiering, in the lake exactly
// once; a write that failed meanwhile is there entirely or not at all.
// make test-kafka-cluster runs it (FLIGHTD_KAFKA_CLUSTER=1).
func TestKafkaClusterBrokerKilledUnderLoad(t *testing.T) {
	t.Parallel()
	if !testkafka.ClusterEnabled() {
		t.Skip("three brokers: make test-kafka-cluster (FLIGHTD_KAFKA_CLUSTER=1)")
	}
	cl := testkafka.StartCluster(t, 3)
	srv := testserver.Start(t, t.TempDir(), "--log", "kafka://"+strings.Join(cl.Addrs(), ","), "--kafka-replication", "3",
		"--kafka-timeout", "10s", "--tiering-interval", "2s")
	c := connect(t, srv)
	c.mustExec("CREATE TABLE orders (id BIGINT, w BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')")

	const writers = 4
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	acked := map[int64]bool{}
	failed := map[int64][]int64{} // first id of a failed write -> its ids
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Go(func() {
			wc := connect(t, srv)
			next := int64(w) * 1_000_000_000
			for ctx.Err() == nil {
				ids := []int64{next, next + 1, next + 2, next + 3} // spread over the buckets
				next += 4
				var vals []string
				for _, id := range ids {
					vals = append(vals, fmt.Sprintf("(%d, %d)", id, w))
				}
				_, err := wc.exec("INSERT INTO orders VALUES " + strings.Join(vals, ", "))
				mu.Lock()
				if err == nil {
					for _, id := range ids {
						acked[id] = true
					}
				} else {
					failed[ids[0]] = ids
				}
				mu.Unlock()
			}
		})
	}
	ackedNow := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	waitMore := func(n int) {
		testserver.Eventually(t, 2*time.Minute, func() error {
			if got := ackedNow(); got < n {
				return fmt.Errorf("%d rows acknowledged, waiting for %d", got, n)
			}
			return nil
		})
	}
	waitMore(2000)
	victim := cl.Broker(1)
	victim.Kill()
	before := ackedNow()
	waitMore(before + 2000) // writes go on with two brokers
	victim.Restart(t)
	waitMore(ackedNow() + 2000)
	cancel()
	wg.Wait()

	got := map[int64]int{}
	for _, r := range c.mustQuery(`SELECT id FROM "orders$rt"`) {
		id, _ := strconv.ParseInt(r[0], 10, 64)
		got[id]++
	}
	for id := range acked {
		require.Equal(t, 1, got[id], "acknowledged row %d", id)
	}
	landed := 0
	for _, ids := range failed {
		n := 0
		for _, id := range ids {
			n += got[id]
		}
		require.True(t, n == 0 || n == len(ids), "a failed write landed in part: %v", ids)
		if n > 0 {
			landed++
		}
	}
	require.Equal(t, len(acked)+4*landed, len(got), "rows nobody wrote")
	t.Logf("%d rows acknowledged; %d writes failed during the kill, %d of them landed", len(acked), len(failed), landed)
	testserver.Eventually(t, 2*time.Minute, func() error {
		if n := c.scalar("SELECT count(*) FROM orders"); n != strconv.Itoa(len(got)) {
			return fmt.Errorf("the lake holds %s rows of %d", n, len(got))
		}
		return nil
	})
	require.Equal(t, strconv.Itoa(len(got)), c.scalar("SELECT count(DISTINCT id) FROM orders"), "each row once in the lake")
}
