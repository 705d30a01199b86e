package logstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// BenchmarkAppend measures durable appends of 1 MiB payloads carrying 10k rows each
// (the size of a 10k-row Arrow IPC batch of the reference data set).
//
//	commit=group   the Store: one committer, concurrent appends share a transaction
//	commit=serial  the Store with one Append per transaction (group commit off)
//	commit=badger  baseline without the Store: every writer commits its own Badger
//	               transaction (Badger's write goroutine groups concurrent commits);
//	               no offsets, no HW
//
// Metrics: rows/s, MB/s, appends/commit (Store only), p50-ms and p99-ms per Append.
func BenchmarkAppend(b *testing.B) {
	const payloadSize, rowsPerPayload = 1 << 20, 10_000
	payload := make([]byte, payloadSize)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range payload {
		payload[i] = byte(rng.Uint32()) // incompressible, like the reference batches
	}
	type bc struct {
		writers int
		sync    bool
		commit  string
	}
	var cases []bc
	for _, w := range []int{1, 4, 16} {
		cases = append(cases, bc{w, true, "group"})
	}
	for _, w := range []int{4, 16} {
		cases = append(cases, bc{w, true, "serial"})
	}
	for _, w := range []int{1, 4, 16} {
		cases = append(cases, bc{w, true, "badger"})
	}
	for _, w := range []int{1, 4} {
		cases = append(cases, bc{w, false, "group"})
	}
	for _, c := range cases {
		name := fmt.Sprintf("payload=1MB/writers=%d/sync=%t/commit=%s", c.writers, c.sync, c.commit)
		b.Run(name, func(b *testing.B) {
			opts := DefaultOptions()
			opts.SyncWrites = c.sync
			if c.commit == "serial" {
				opts.maxGroupRequests = 1
			}
			var appendFn func(w int) error
			var stats func() (commits, reqs int64)
			switch c.commit {
			case "badger":
				opts.fill()
				db, err := badger.Open(opts.badgerOptions(b.TempDir(), &badgerLogger{l: opts.Logger}))
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				var seq atomic.Int64
				appendFn = func(w int) error {
					key := entryKey(nil, Bucket{"bench", int32(w)}, seq.Add(1))
					val := appendRecord(nil, rowsPerPayload, payload)
					return db.Update(func(txn *badger.Txn) error { return txn.Set(key, val) })
				}
			default:
				s, err := Open(b.TempDir(), opts)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				appendFn = func(w int) error {
					_, err := s.Append(context.Background(), []Entry{{Bucket: Bucket{"bench", int32(w)}, Rows: rowsPerPayload, Payload: payload}})
					return err
				}
				stats = func() (int64, int64) {
					s.mu.RLock()
					defer s.mu.RUnlock()
					return s.stats.commits, s.stats.requests
				}
			}
			var c0, r0 int64
			if stats != nil {
				c0, r0 = stats()
			}
			b.SetBytes(payloadSize)
			var next atomic.Int64
			lat := make([][]time.Duration, c.writers)
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for w := range c.writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						t0 := time.Now()
						if err := appendFn(w); err != nil {
							b.Error(err)
							return
						}
						lat[w] = append(lat[w], time.Since(t0))
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			all := slices.Concat(lat...)
			slices.Sort(all)
			b.ReportMetric(float64(b.N)*rowsPerPayload/elapsed.Seconds(), "rows/s")
			if len(all) > 0 {
				b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
			}
			if stats != nil {
				c1, r1 := stats()
				if c1 > c0 {
					b.ReportMetric(float64(r1-r0)/float64(c1-c0), "appends/commit")
				}
			}
		})
	}
}
