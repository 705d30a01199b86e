package integration

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
	s3fio "github.com/flightd/flightd/lake/fileio/s3"
)

// TestS3Warehouse runs flightd over a real S3 server (Versity S3 Gateway):
// tables are created, written, tiered and read back, also after a restart.
func TestS3Warehouse(t *testing.T) {
	t.Parallel()
	endpoint, _ := testserver.StartVersityGW(t)
	opts := s3fio.Options{Endpoint: endpoint, Region: testserver.S3Region, AccessKeyID: testserver.S3AccessKey, SecretAccessKey: testserver.S3SecretKey}
	fio, err := s3fio.New(context.Background(), "flightd-wh", opts)
	require.NoError(t, err)
	_, err = fio.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("flightd-wh")})
	require.NoError(t, err)

	testserver.Setenv(t, "FLIGHTD_S3_SECRET_ACCESS_KEY", testserver.S3SecretKey)
	srv := testserver.Start(t, t.TempDir(), "--warehouse", "s3://flightd-wh/lake",
		"--s3-endpoint", endpoint, "--s3-access-key-id", testserver.S3AccessKey, "--s3-region", testserver.S3Region)
	c := connect(t, srv)
	c.mustExec("CREATE DATABASE shop")
	c.mustExec("CREATE TABLE shop.orders (id BIGINT, customer STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	c.mustExec("CREATE TABLE shop.events (id BIGINT, day DATE) PARTITIONED BY (day)")
	c.mustExec("INSERT INTO shop.orders VALUES (1, 'a'), (2, 'b'), (3, 'c')")
	c.mustExec("INSERT INTO shop.orders VALUES (2, 'b2')")
	c.mustExec("INSERT INTO shop.events VALUES (1, DATE '2024-01-01'), (2, DATE '2024-01-02'), (3, NULL)")
	want := "1|a,2|b2,3|c"
	require.Equal(t, want, strings.Join(c.idCustomer(`shop."orders$rt"`), ","))
	testserver.Eventually(t, 30*time.Second, func() error {
		if got := strings.Join(c.idCustomer("shop.orders"), ","); got != want {
			return fmt.Errorf("lake has %q", got)
		}
		if n := c.scalar("SELECT count(*) FROM shop.events"); n != "3" {
			return fmt.Errorf("events has %s rows in the lake", n)
		}
		return nil
	})
	c.close()
	srv.Restart(syscall.SIGTERM)
	c = connect(t, srv)
	require.Equal(t, want, strings.Join(c.idCustomer("shop.orders"), ","))
	require.Equal(t, [][]string{{"2024-01-01", "1"}, {"2024-01-02", "1"}, {"NULL", "1"}},
		c.mustQuery(`SELECT day::VARCHAR, count(*) FROM shop.events GROUP BY day ORDER BY day NULLS LAST`))
	// The objects are where any Paimon engine looks for them.
	out, err := fio.Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("flightd-wh"), Prefix: aws.String("lake/shop.db/orders/snapshot/")})
	require.NoError(t, err)
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, *o.Key)
	}
	require.Contains(t, keys, "lake/shop.db/orders/snapshot/snapshot-1")
}
