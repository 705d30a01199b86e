package kafkalog

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestATransactionAcrossTheCatchUpLineIsNotHeldBack: a transaction wrote
// buckets 0 and 1; when the tailer began, the stable offsets showed its end
// in bucket 1 (below catchTo there) but not yet in bucket 0 (its commit
// marker came a moment later). Its entry in bucket 0 must become visible
// once both were seen, not after holdLimit (a write another node had
// acknowledged was missing from a read after Sync, for 2 s).
func TestATransactionAcrossTheCatchUpLineIsNotHeldBack(t *testing.T) {
	l := &Log{advanced: make(chan struct{})}
	tb := &table{topic: "x", buckets: map[int32]*bucket{}, txns: map[uint64]*txnHold{}}
	b0, b1 := &bucket{}, &bucket{}
	tb.buckets[0], tb.buckets[1] = b0, b1
	for _, st := range []*bucket{b0, b1} {
		st.t = tailState{added: true, known: true}
		st.t.num.anchored = true
	}
	b0.t.catchTo = 0 // the transaction is past the catch-up line in bucket 0
	b1.t.catchTo = 5 // and before it in bucket 1
	rec := func(p int32, off int64) *kgo.Record {
		h := entryHeader{rows: 1, parts: 1, txn: 7, txnEntries: 2, ckAt: -1}
		return &kgo.Record{Topic: "x", Partition: p, Offset: off, Value: []byte("v"),
			Headers: []kgo.RecordHeader{{Key: headerKey, Value: h.encode()}}}
	}
	l.numberLocked(tb, b0, rec(0, 0))
	l.settleLocked(b0)
	require.Zero(t, b0.hw, "held until its partner in bucket 1 is seen")
	l.numberLocked(tb, b1, rec(1, 0))
	l.settleLocked(b1)
	require.EqualValues(t, 1, b1.hw)
	require.EqualValues(t, 1, b0.hw, "released once both were seen")
	require.Empty(t, tb.txns)
}
