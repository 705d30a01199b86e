package integration

// Java Paimon and flightd committing in turns to the same tables of an S3
// warehouse (Versity S3 Gateway). Java runs PaimonS3Check (integration/java,
// in the same jar as PaimonCheck), which reaches S3 through Paimon's own S3
// file system (the paimon-s3 plugin: Hadoop S3A).

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
	"github.com/flightd/flightd/lake"
	s3fio "github.com/flightd/flightd/lake/fileio/s3"
	"github.com/flightd/flightd/lakestream"
)

// javaS3Result is what one PaimonS3Check run printed: the rows of each read, by operation index.
type javaS3Result struct {
	ops  []string
	rows map[int][]map[string]any
}

// reads returns, by table, the rows of the read operations ops[from:to].
func (r javaS3Result) reads(from, to int) map[string][]map[string]any {
	out := map[string][]map[string]any{}
	for i := from; i < to; i++ {
		if table, ok := strings.CutPrefix(r.ops[i], "read:"); ok {
			out[table] = append([]map[string]any{}, r.rows[i]...)
		}
	}
	return out
}

// javaS3 runs PaimonS3Check over warehouse with ops ("read:db.t",
// "write:db.t=rows.jsonl[;k=v]", "compact:db.t"), in one JVM, in order. The S3 connection goes
// through the environment (the secret never on the command line).
func javaS3(t *testing.T, jar, endpoint, warehouse string, ops ...string) javaS3Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", jar, "flightd.PaimonS3Check", warehouse}, ops...)
	cmd := exec.CommandContext(ctx, "java", args...)
	cmd.Env = append(os.Environ(),
		"PAIMON_S3_ENDPOINT="+endpoint,
		"PAIMON_S3_ACCESS_KEY="+testserver.S3AccessKey,
		"PAIMON_S3_SECRET_KEY="+testserver.S3SecretKey,
		"PAIMON_S3_REGION="+testserver.S3Region)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	require.NoError(t, err, "PaimonS3Check %s:\n%s", strings.Join(ops, " "), stderr.String())
	var steps []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(l, "PaimonS3Check: ") {
			steps = append(steps, strings.TrimPrefix(l, "PaimonS3Check: "))
		}
	}
	t.Logf("PaimonS3Check (%s in all): %s", time.Since(start).Round(time.Millisecond), strings.Join(steps, "; "))
	res := javaS3Result{ops: ops, rows: map[int][]map[string]any{}}
	dec := json.NewDecoder(&stdout)
	dec.UseNumber()
	for {
		var line struct { // a read's row, or a write's or compaction's new snapshot id
			Op  int            `json:"op"`
			Row map[string]any `json:"row"`
		}
		if err := dec.Decode(&line); err == io.EOF {
			break
		} else {
			require.NoError(t, err, "PaimonS3Check output")
		}
		if line.Row != nil {
			res.rows[line.Op] = append(res.rows[line.Op], line.Row)
		}
	}
	return res
}

// jsonlFile writes rows as a JSON-lines file and returns its path.
func jsonlFile(t *testing.T, rows []map[string]any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range rows {
		require.NoError(t, enc.Encode(r))
	}
	f, err := os.CreateTemp(t.TempDir(), "rows-*.jsonl")
	require.NoError(t, err)
	_, err = f.Write(buf.Bytes())
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return f.Name()
}

// The columns pkValues writes: (id, name, amount, d, ts, day, ok, raw).
const pkColumns = "id BIGINT, name STRING, amount DOUBLE, d DECIMAL(10,2), ts TIMESTAMP(6), day DATE, ok BOOLEAN, raw BYTES"

// pkRowValues returns the values pkValues renders for id and tag, as
// PaimonS3Check's JSON (only the id for the row of NULLs of every 7th id).
func pkRowValues(id int64, tag string) map[string]any {
	if id%7 == 3 {
		return map[string]any{"id": id}
	}
	ts := time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(id*1234567) * time.Microsecond)
	return map[string]any{
		"id":     id,
		"name":   fmt.Sprintf("%s-%d", tag, id),
		"amount": float64(id) + 0.25,
		"d":      fmt.Sprintf("%d.%02d", id%1000, id%100),
		"ts":     ts.Format("2006-01-02T15:04:05.000000"),
		"day":    time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC).AddDate(0, 0, int(id%400)).Format("2006-01-02"),
		"ok":     id%2 == 0,
		"raw":    base64.StdEncoding.EncodeToString([]byte{byte(id % 256), 0, 'A', 'B'}),
	}
}

// pkLine is the canonical line (as typedQuery renders it) of the row pkValues writes for id and tag.
func pkLine(id int64, tag string) string {
	v := pkRowValues(id, tag)
	if len(v) == 1 {
		return fmt.Sprintf("%d|NULL|NULL|NULL|NULL|NULL|NULL|NULL", id)
	}
	ts, err := time.Parse("2006-01-02T15:04:05.000000", v["ts"].(string))
	if err != nil {
		panic(err)
	}
	return strings.Join([]string{strconv.FormatInt(id, 10), v["name"].(string), strconv.FormatFloat(v["amount"].(float64), 'g', -1, 64),
		canonDecimal(v["d"].(string), 2), ts.Format(tsLayout), v["day"].(string), strconv.FormatBool(v["ok"].(bool)), v["raw"].(string)}, "|")
}

// deleteBatch is an ingest batch that deletes the keys ids of a table keyed by id BIGINT.
func deleteBatch(ids []int64) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "_rowkind", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append("-D")
	}
	return b.NewRecordBatch()
}

// s3Snapshots reads the snapshot files of a table from the bucket, in id order.
func s3Snapshots(t *testing.T, client *s3.Client, bucket, tablePrefix string) []lake.Snapshot {
	t.Helper()
	ctx := context.Background()
	prefix := tablePrefix + "/snapshot/snapshot-"
	var snaps []lake.Snapshot
	pg := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		require.NoError(t, err)
		for _, o := range page.Contents {
			obj, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: o.Key})
			require.NoError(t, err)
			b, err := io.ReadAll(obj.Body)
			obj.Body.Close()
			require.NoError(t, err)
			var s struct {
				ID         int64  `json:"id"`
				CommitUser string `json:"commitUser"`
				CommitKind string `json:"commitKind"`
			}
			require.NoError(t, json.Unmarshal(b, &s), *o.Key)
			snaps = append(snaps, lake.Snapshot{ID: s.ID, CommitUser: s.CommitUser, CommitKind: s.CommitKind})
		}
	}
	sort.Slice(snaps, func(i, j int) bool { return snaps[i].ID < snaps[j].ID })
	return snaps
}

// TestJavaS3MixedCommits: on an S3 warehouse, flightd creates, writes and
// tiers a primary-key and an append table (upserts and deletes); Java Paimon
// commits upserts, deletes and appends on top (level-0 files only); flightd
// tiers more rounds, compacting Java's files with its own; Java writes again
// and fully compacts; flightd restarts and tiers more; Java reads last. After
// every turn flightd (`SELECT * FROM t` and `t$rt`) and Java read exactly the
// rows of a model: no corruption, no duplicate, no lost row.
//
// The writers take turns and never run concurrently: flightd creates its
// snapshot, schema and manifest files with a conditional PUT (If-None-Match:
// *), but Java Paimon without a catalog lock commits snapshot N by checking
// that it does not exist, writing a temporary object and copying it to
// snapshot-N (S3A's rename), with no condition on the target: that fences
// nothing. So Java runs only once flightd has tiered everything and its
// snapshots are quiet, and flightd gets new rows only after Java's process
// has exited.
func TestJavaS3MixedCommits(t *testing.T) {
	t.Parallel()
	jar := paimonJar(t)
	testStart := time.Now()
	endpoint, _ := testserver.StartVersityGW(t)
	const bucket = "flightd-java"
	ctx := context.Background()
	fio, err := s3fio.New(ctx, bucket, s3fio.Options{Endpoint: endpoint, Region: testserver.S3Region,
		AccessKeyID: testserver.S3AccessKey, SecretAccessKey: testserver.S3SecretKey})
	require.NoError(t, err)
	_, err = fio.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	require.NoError(t, err)
	wh := "s3://" + bucket + "/lake"

	testserver.Setenv(t, "FLIGHTD_S3_SECRET_ACCESS_KEY", testserver.S3SecretKey)
	srv := testserver.Start(t, t.TempDir(), "--warehouse", wh, "--s3-endpoint", endpoint,
		"--s3-access-key-id", testserver.S3AccessKey, "--s3-region", testserver.S3Region, "--s3-path-style", "true")
	c := connect(t, srv)
	c.mustExec("CREATE DATABASE s3x")
	c.mustExec(`CREATE TABLE s3x.pk (` + pkColumns + `, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')`)
	c.mustExec(`CREATE TABLE s3x.ap (id BIGINT, name STRING)`)

	// The model: the tag of every live key of pk; the lines of ap.
	pk := map[int64]string{}
	var ap []string
	model := func() map[string][]string {
		lines := make([]string, 0, len(pk))
		for id, tag := range pk {
			lines = append(lines, pkLine(id, tag))
		}
		sort.Strings(lines)
		aps := append([]string(nil), ap...)
		sort.Strings(aps)
		return map[string][]string{"s3x.pk": lines, "s3x.ap": aps}
	}

	// flightd's writes: SQL upserts and appends, deletes by ingest with _rowkind.
	flightdUpsert := func(ids []int64, tag string) {
		c.mustExec("INSERT INTO s3x.pk VALUES " + pkValues(ids, tag))
		for _, id := range ids {
			pk[id] = tag
		}
	}
	flightdDelete := func(ids []int64) {
		rec := deleteBatch(ids)
		defer rec.Release()
		_, err := c.ingest("s3x", "pk", adbc.OptionValueIngestModeAppend, rec)
		require.NoError(t, err)
		for _, id := range ids {
			delete(pk, id)
		}
	}
	flightdAppend := func(ids []int64, tag string) {
		var vals []string
		for _, id := range ids {
			vals = append(vals, fmt.Sprintf("(%d, '%s-%d')", id, tag, id))
			ap = append(ap, fmt.Sprintf("%d|%s-%d", id, tag, id))
		}
		c.mustExec("INSERT INTO s3x.ap VALUES " + strings.Join(vals, ", "))
	}
	// Java's writes: PaimonS3Check operations (the model changes as they are built).
	javaPK := func(upserts []int64, tag string, deletes []int64, opts string) string {
		var rows []map[string]any
		for _, id := range upserts {
			rows = append(rows, pkRowValues(id, tag))
			pk[id] = tag
		}
		for _, id := range deletes {
			rows = append(rows, map[string]any{"id": id, "_kind": "-D"})
			delete(pk, id)
		}
		return "write:s3x.pk=" + jsonlFile(t, rows) + opts
	}
	javaAP := func(ids []int64, tag string) string {
		var rows []map[string]any
		for _, id := range ids {
			rows = append(rows, map[string]any{"id": id, "name": fmt.Sprintf("%s-%d", tag, id)})
			ap = append(ap, fmt.Sprintf("%d|%s-%d", id, tag, id))
		}
		return "write:s3x.ap=" + jsonlFile(t, rows)
	}
	read := []string{"read:s3x.pk", "read:s3x.ap"}

	// checkFlightd: flightd's lake and $rt hold exactly want.
	checkFlightd := func(t *testing.T, want map[string][]string) {
		t.Helper()
		for name, w := range want {
			require.Equal(t, w, c.mustTyped("SELECT * FROM "+name).rows, "flightd %s", name)
			db, table, _ := strings.Cut(name, ".")
			require.Equal(t, w, c.mustTyped(fmt.Sprintf(`SELECT * FROM %s."%s$rt"`, db, table)).rows, "flightd %s$rt", name)
		}
	}
	// seenByFlightd waits until flightd reads want after another engine's
	// commits: on S3 a server learns them from its background check of the
	// tables it reads, within two seconds; then checkFlightd.
	seenByFlightd := func(t *testing.T, want map[string][]string) {
		t.Helper()
		testserver.Eventually(t, 10*time.Second, func() error {
			for name, w := range want {
				db, table, _ := strings.Cut(name, ".")
				for _, q := range []string{name, fmt.Sprintf(`%s."%s$rt"`, db, table)} {
					res, err := c.typedQuery("SELECT * FROM " + q)
					if err != nil {
						return err
					}
					if !slices.Equal(res.rows, w) {
						return fmt.Errorf("flightd reads %d rows of %s, want %d", len(res.rows), q, len(w))
					}
				}
			}
			return nil
		})
		checkFlightd(t, want)
	}
	// checkJava: Java read exactly want (rendered with flightd's column types).
	checkJava := func(t *testing.T, want map[string][]string, java map[string][]map[string]any) {
		t.Helper()
		require.Len(t, java, len(want))
		for name, w := range want {
			jrows, ok := java[name]
			require.True(t, ok, "Java did not read %s", name)
			require.Equal(t, w, canonJava(t, jrows, c.mustTyped("SELECT * FROM "+name+" LIMIT 0")), "Java %s", name)
		}
	}
	// quiesce waits until flightd has tiered everything and committed nothing
	// (no tiering round, no compaction) for 1.5 tiering intervals: Java's turn
	// may begin.
	quiesce := func() {
		t.Helper()
		waitTiered(t, c, "s3x", "pk", len(pk))
		waitTiered(t, c, "s3x", "ap", len(ap))
		last, since := "", time.Now()
		testserver.Eventually(t, 30*time.Second, func() error {
			row := c.mustQuery(`SELECT sum(snapshot_id), sum(lag_rows) FROM sys.tiering WHERE database = 's3x'`)[0]
			if cur := strings.Join(row, "/"); cur != last {
				last, since = cur, time.Now()
			}
			if row[1] != "0" || time.Since(since) < 1500*time.Millisecond {
				return fmt.Errorf("flightd is not quiet yet (snapshot ids/lag %s)", last)
			}
			return nil
		})
	}
	// commits returns "KIND by WHO" for the snapshots of pk from index from on.
	commits := func(from int) []string {
		var out []string
		for _, s := range s3Snapshots(t, fio.Client(), bucket, "lake/s3x.db/pk")[from:] {
			who := "Java"
			if s.CommitUser == lakestream.CommitUser {
				who = "flightd"
			}
			out = append(out, fmt.Sprintf("%d %s by %s", s.ID, s.CommitKind, who))
		}
		return out
	}

	// Turn 1, flightd: two tiered rounds on pk (the second with upserts and
	// deletes), one on ap.
	flightdUpsert(idRange(0, 200), "f1")
	flightdAppend(idRange(0, 20), "f1")
	waitTiered(t, c, "s3x", "pk", len(pk))
	flightdUpsert(idRange(150, 250), "f2")
	flightdDelete(append(idRange(10, 20), 160, 161))
	quiesce()
	want := model()
	t.Run("flightd-turn-1", func(t *testing.T) { checkFlightd(t, want) })

	// Turn 2, Java (one JVM): reads flightd's tables, commits upserts of
	// flightd's keys in every bucket, new keys, deletes of flightd's keys
	// (write-only: no compaction, Java's level-0 files stay next to
	// flightd's) and appends, and reads back.
	res := javaS3(t, jar, endpoint, wh, append(append(append([]string{}, read...),
		javaPK(append(idRange(0, 40), idRange(1000, 1040)...), "j1", append(idRange(100, 110), 249, 12), ";write-only=true"),
		javaAP(idRange(100, 110), "j1")), read...)...)
	t.Run("java-reads-turn-1", func(t *testing.T) { checkJava(t, want, res.reads(0, 2)) })
	want = model()
	t.Run("java-turn-2", func(t *testing.T) {
		checkJava(t, want, res.reads(4, 6))
		seenByFlightd(t, want)
	})

	// Turn 3, flightd: three tiered rounds of upserts over Java's and its own
	// rows, deletes of Java's rows and appends. Every bucket reaches 5 files:
	// flightd compacts Java's level-0 files (and their deletes) with its own.
	before := len(commits(0))
	flightdUpsert(append(idRange(20, 60), idRange(1020, 1030)...), "f3")
	flightdAppend(idRange(200, 205), "f3")
	waitTiered(t, c, "s3x", "pk", len(pk))
	flightdDelete(append(idRange(1000, 1005), 30, 31))
	flightdUpsert(idRange(1500, 1520), "f4") // pkValues: ids below 1740 (its INTERVAL literal is an INT)
	waitTiered(t, c, "s3x", "pk", len(pk))
	flightdUpsert(idRange(120, 145), "f5")
	quiesce()
	kinds := commits(before)
	t.Logf("flightd's turn 3 committed %v", kinds)
	require.True(t, slices.ContainsFunc(kinds, func(k string) bool { return strings.HasSuffix(k, "COMPACT by flightd") }),
		"flightd should have compacted the buckets holding Java's files")
	want = model()
	t.Run("flightd-turn-3", func(t *testing.T) { checkFlightd(t, want) })

	// Turn 4, Java: reads, writes (compaction allowed), fully compacts pk (a
	// COMPACT snapshot that replaces every file flightd wrote), reads back.
	before = len(commits(0))
	res = javaS3(t, jar, endpoint, wh, append(append(append([]string{}, read...),
		javaPK(append(idRange(70, 90), 1505), "jc", append(idRange(1030, 1035), 1500, 45), ""),
		javaAP(idRange(300, 303), "jc"), "compact:s3x.pk"), read...)...)
	t.Run("java-reads-turn-3", func(t *testing.T) { checkJava(t, want, res.reads(0, 2)) })
	kinds = commits(before)
	t.Logf("Java's turn 4 committed %v", kinds)
	for _, k := range kinds {
		require.True(t, strings.HasSuffix(k, "by Java"), "flightd committed during Java's turn: %v", kinds)
	}
	require.True(t, slices.ContainsFunc(kinds, func(k string) bool { return strings.HasSuffix(k, "COMPACT by Java") }))
	want = model()
	t.Run("java-turn-4", func(t *testing.T) {
		checkJava(t, want, res.reads(5, 7))
		seenByFlightd(t, want)
	})

	// Turn 5, flightd after a restart: upserts over Java's compacted files and
	// new keys, deletes, appends.
	c.close()
	srv.Restart(syscall.SIGTERM)
	c = connect(t, srv)
	t.Run("flightd-restarted", func(t *testing.T) { checkFlightd(t, want) })
	flightdUpsert(append(idRange(80, 95), idRange(1035, 1040)...), "f6")
	flightdDelete([]int64{70, 71, 1039})
	flightdAppend(idRange(400, 410), "f6")
	quiesce()
	want = model()
	t.Run("flightd-turn-5", func(t *testing.T) { checkFlightd(t, want) })

	// Last, Java reads.
	res = javaS3(t, jar, endpoint, wh, read...)
	t.Run("java-reads-turn-5", func(t *testing.T) { checkJava(t, want, res.reads(0, 2)) })
	t.Logf("s3x.pk snapshots: %v", commits(0))
	t.Logf("pk has %d rows, ap %d; the test took %s", len(pk), len(ap), time.Since(testStart).Round(time.Millisecond))
}
