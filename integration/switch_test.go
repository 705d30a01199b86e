package integration

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// TestDisableLakeStream: ALTER TABLE ... SET ('lakestream.enabled' = 'false')
// drains the log into the lake; writes then land in the lake at once, and
// t$rt is gone until the log is switched on again.
func TestDisableLakeStream(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir(), "--tiering-interval", "1h")
	c := connect(t, srv)
	c.mustExec("CREATE TABLE orders (id BIGINT, customer STRING, PRIMARY KEY (id) NOT ENFORCED)")
	c.mustExec("INSERT INTO orders VALUES (1, 'a'), (2, 'b')")
	require.Equal(t, "0", c.scalar("SELECT count(*) FROM orders"), "tiering waits an hour")
	c.mustExec("ALTER TABLE orders SET ('lakestream.enabled' = 'false')")
	require.Equal(t, "1|a,2|b", strings.Join(c.idCustomer("orders"), ","), "drained on switch-off")
	c.mustExec("INSERT INTO orders VALUES (2, 'b2'), (3, 'c')")
	require.Equal(t, "1|a,2|b2,3|c", strings.Join(c.idCustomer("orders"), ","), "direct writes are in the lake at once")
	_, err := c.query(`SELECT * FROM "orders$rt"`)
	require.ErrorContains(t, err, "lakestream.enabled")
	_, err = c.exec("ALTER TABLE orders SET ('lakestream.enabled' = 'maybe')")
	require.ErrorContains(t, err, "'true' or 'false'")

	c.mustExec("ALTER TABLE orders SET ('lakestream.enabled' = 'true')")
	c.mustExec("INSERT INTO orders VALUES (4, 'd')")
	require.Equal(t, "1|a,2|b2,3|c,4|d", strings.Join(c.idCustomer(`"orders$rt"`), ","))
	require.Equal(t, "1|a,2|b2,3|c", strings.Join(c.idCustomer("orders"), ","))
}
