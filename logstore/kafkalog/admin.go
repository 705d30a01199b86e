package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightd/flightd/logstore"
)

// topicConfigs are the configurations of the topics the log creates: records
// are deleted only by the log (DeleteRecords below what the lake holds and
// the retention allows), never by time, size or compaction.
func (l *Log) topicConfigs() map[string]*string {
	s := func(v string) *string { return &v }
	return map[string]*string{
		"cleanup.policy":    s("delete"),
		"retention.ms":      s("-1"),
		"retention.bytes":   s("-1"),
		"max.message.bytes": s(strconv.Itoa(2*l.opts.MaxRecordBytes + 64<<10)),
	}
}

// ensureTopics creates the topics of the group's tables that have none yet,
// adds partitions to those with fewer than the buckets written, and waits
// until the writer knows every partition it is to write.
func (l *Log) ensureTopics(ctx context.Context, w *writer, group []*request) error {
	need := map[string]int32{} // topic -> partitions needed
	var grow []*table
	l.mu.RLock()
	for _, r := range group {
		for _, e := range r.entries {
			t := l.tables[e.Bucket.Table]
			if t == nil {
				continue
			}
			need[t.topic] = max(need[t.topic], e.Bucket.Bucket+1, t.want)
			if t.partitions <= e.Bucket.Bucket && !slices.Contains(grow, t) {
				grow = append(grow, t)
			}
		}
	}
	l.mu.RUnlock()
	for _, t := range grow {
		if err := l.growTopic(ctx, t, need[t.topic]); err != nil {
			return err
		}
	}
	// The writer refuses a partition its metadata does not know yet (the
	// other writer may have grown the topic); a topic it does not know at
	// all it learns as it first produces to it.
	for topic, n := range need {
		if known, _, _ := w.cl.PartitionLeader(topic, 0); known < 0 {
			continue
		}
		if leader, _, _ := w.cl.PartitionLeader(topic, n-1); leader >= 0 {
			continue
		}
		if err := waitPartition(ctx, w.cl, topic, n-1); err != nil {
			return l.unavailable(fmt.Sprintf("learn the partitions of %s", topic), err)
		}
	}
	return nil
}

// growTopic creates t's topic with n partitions, or grows it to n, and
// waits until the brokers serve them all.
func (l *Log) growTopic(ctx context.Context, t *table, n int32) error {
	l.mu.RLock()
	have := t.partitions
	l.mu.RUnlock()
	if have == 0 {
		resp, err := l.admin.CreateTopic(ctx, n, l.opts.ReplicationFactor, l.topicConfigs(), t.topic)
		if err == nil {
			err = resp.Err
		}
		switch {
		case err == nil:
			have = n
		case errors.Is(err, kerr.TopicAlreadyExists):
			ts, lerr := l.admin.ListTopics(ctx, t.topic)
			if lerr != nil {
				return l.unavailable("describe topic "+t.topic, lerr)
			}
			d, ok := ts[t.topic]
			if !ok || d.Err != nil {
				return fmt.Errorf("%w: topic %s exists but cannot be described: %v", logstore.ErrUnavailable, t.topic, d.Err)
			}
			have = int32(len(d.Partitions))
		default:
			return l.unavailable("create topic "+t.topic, err)
		}
	}
	if have < n {
		resp, err := l.admin.UpdatePartitions(ctx, int(n), t.topic)
		if err == nil {
			var r kadm.CreatePartitionsResponse
			if r, err = resp.On(t.topic, nil); err == nil {
				err = r.Err
			}
		}
		if err != nil && !errors.Is(err, kerr.InvalidPartitions) {
			return l.unavailable(fmt.Sprintf("grow topic %s to %d partitions", t.topic, n), err)
		}
		have = n
	}
	if err := l.waitServed(ctx, t.topic, have); err != nil {
		return l.unavailable(fmt.Sprintf("wait for the partitions of %s", t.topic), err)
	}
	if err := l.addPartitions(ctx, t, have); err != nil {
		return err
	}
	if l.opts.Shared {
		return nil
	}
	// One writer: number what the partitions hold (another node's topic,
	// or one this log does not know yet), then number its own appends.
	return l.follow(ctx, []*table{t})
}

// Truncate deletes the bucket's entries that end at or below below, with
// Kafka's DeleteRecords, as logstore.Store.Truncate does; it always keeps the
// bucket's last entry. Before it deletes, it records the row the kept entry
// begins at (see anchors), so that every node numbers the partition from
// its new start.
func (l *Log) Truncate(ctx context.Context, b logstore.Bucket, below int64) error {
	if err := l.enter(); err != nil {
		return err
	}
	defer l.leave()
	l.adminMu.Lock()
	defer l.adminMu.Unlock()
	l.mu.RLock()
	st := l.stateLocked(b)
	var hw, start int64
	var topic string
	if st != nil {
		hw, start, topic = st.hw, st.start, l.tables[b.Table].topic
	}
	l.mu.RUnlock()
	if st == nil || hw == 0 {
		return nil
	}
	// The entry holding row r is the first one kept.
	r := min(below, hw-1)
	if r <= start {
		return nil
	}
	pt, err := l.locate(ctx, b, topic, r)
	if err != nil {
		return err
	}
	n := numberer{anchored: true, next: pt.base}
	keepBase, keepAt := int64(-1), int64(-1)
	err = l.scan(ctx, topic, b.Bucket, pt.at, 1<<62, func(rec *kgo.Record) error {
		if rec.Attrs.IsControl() {
			return nil
		}
		e, _, first, err := n.take(rec)
		if err != nil || !first {
			return err
		}
		if e.base+e.h.rows > r {
			keepBase, keepAt = e.base, e.at
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return fmt.Errorf("kafkalog: truncate %v below %d: %w", b, below, err)
	}
	if keepBase <= start {
		return nil
	}
	dctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	if err := l.writeAnchor(dctx, topic, b.Bucket, keepAt, keepBase); err != nil {
		return fmt.Errorf("kafkalog: truncate %v below %d: %w", b, below, err)
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: b.Bucket, At: keepAt})
	resp, err := l.admin.DeleteRecords(dctx, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("kafkalog: truncate %v below %d: %w", b, below, l.unavailable("delete records", err))
	}
	l.dropAnchorsBelow(dctx, topic, b.Bucket, keepAt)
	l.mu.Lock()
	if st := l.stateLocked(b); st != nil {
		if keepBase > st.start {
			st.start, st.startAt = keepBase, keepAt
		}
		st.idx.dropBelow(st.start)
		st.idx.add(keepBase, keepAt)
	}
	l.mu.Unlock()
	return nil
}

// DropTable deletes the table's topic. Like logstore.Store.DropTable it is
// a barrier in the append queue, and the table's high watermarks read 0 as
// soon as it is queued.
func (l *Log) DropTable(ctx context.Context, id string) error {
	if err := l.enter(); err != nil {
		return err
	}
	defer l.leave()
	l.adminMu.Lock()
	defer l.adminMu.Unlock()
	req := &request{kind: reqDrop, table: id, done: make(chan error, 1)}
	l.mu.Lock()
	if err := ctx.Err(); err != nil {
		l.mu.Unlock()
		return err
	}
	t := l.tables[id]
	delete(l.tables, id)
	var ps []int32
	if t != nil {
		delete(l.byTopic, t.topic)
		for p := range t.buckets {
			ps = append(ps, p)
		}
		for _, st := range t.buckets {
			for at, w := range st.t.waits {
				w.aborted = true
				close(w.done)
				delete(st.t.waits, at)
			}
		}
	}
	l.notifyLocked()
	if t == nil {
		l.mu.Unlock()
		return nil
	}
	req.entries = nil
	req.table = t.topic
	l.queue = append(l.queue, req)
	l.mu.Unlock()
	l.tail.RemoveConsumePartitions(map[string][]int32{t.topic: ps})
	l.signal()
	if err := <-req.done; err != nil {
		return fmt.Errorf("kafkalog: drop table %q: %w", id, err)
	}
	return nil
}

// execDrop deletes a topic (in the committer, after every append queued
// before the drop).
func (l *Log) execDrop(topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.Timeout)
	defer cancel()
	resp, err := l.admin.DeleteTopics(ctx, topic)
	if err == nil {
		if r, ok := resp[topic]; ok {
			err = r.Err
		}
	}
	if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return l.unavailable("delete topic "+topic, err)
	}
	return nil
}

// waitServed polls the brokers' metadata until the topic has n partitions,
// each with a leader.
func (l *Log) waitServed(ctx context.Context, topic string, n int32) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ts, err := l.admin.ListTopics(ctx, topic)
		if err == nil {
			if d, ok := ts[topic]; ok && d.Err == nil && int32(len(d.Partitions)) >= n {
				led := true
				for _, p := range d.Partitions {
					led = led && p.Leader >= 0 && p.Err == nil
				}
				if led {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// waitPartition refreshes the client's metadata until it knows the
// partition.
func waitPartition(ctx context.Context, cl *kgo.Client, topic string, p int32) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		cl.ForceMetadataRefresh()
		if leader, _, err := cl.PartitionLeader(topic, p); err == nil && leader >= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
