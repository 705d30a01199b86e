package kafkalog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Anchors.
//
// The numbering of a partition starts at row 0 at Kafka offset 0. Truncate
// moves a partition's start (DeleteRecords) to the first record of an
// entry; before it deletes anything it writes that entry's row offset to
// the anchors topic (<prefix>.log.anchors, compacted, one partition), keyed
// <topic>/<partition>/<Kafka offset>. A tailer that begins at a partition's
// start numbers it from the anchor at that offset. Once the delete is done
// the anchors below it are removed (tombstones).

func (l *Log) anchorsTopic() string { return l.opts.TopicPrefix + ".log.anchors" }

func anchorKey(topic string, p int32, at int64) string {
	return topic + "/" + strconv.Itoa(int(p)) + "/" + strconv.FormatInt(at, 10)
}

func parseAnchorKey(k string) (topic string, p int32, at int64, ok bool) {
	i := strings.LastIndexByte(k, '/')
	if i < 0 {
		return "", 0, 0, false
	}
	j := strings.LastIndexByte(k[:i], '/')
	if j < 0 {
		return "", 0, 0, false
	}
	pp, err1 := strconv.ParseInt(k[j+1:i], 10, 32)
	a, err2 := strconv.ParseInt(k[i+1:], 10, 64)
	if err1 != nil || err2 != nil {
		return "", 0, 0, false
	}
	return k[:j], int32(pp), a, true
}

// anchorAt returns the row the partition's numbering begins at when it
// begins at Kafka offset at. l.mu must be held (either way).
func (l *Log) anchorAt(topic string, p int32, at int64) (int64, bool) {
	row, ok := l.anchors[topicPartition{topic, p}][at]
	return row, ok
}

// loadAnchors reads the anchors topic to its end.
func (l *Log) loadAnchors(ctx context.Context) error {
	topic := l.anchorsTopic()
	ends, err := l.admin.ListEndOffsets(ctx, topic)
	if err == nil {
		if e := ends.Error(); e != nil && !errors.Is(e, kerr.UnknownTopicOrPartition) {
			err = e
		}
	}
	if err != nil {
		return l.unavailable("list the end of "+topic, err)
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || end.Err != nil || end.Offset == 0 {
		return nil // no anchors yet
	}
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), l.common...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))...)
	if err != nil {
		return fmt.Errorf("kafkalog: %w", err)
	}
	defer cl.Close()
	got := map[topicPartition]map[int64]int64{}
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return l.unavailable("read "+topic, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return l.unavailable("read "+topic, ferr)
		}
		last := int64(-1)
		fs.EachRecord(func(r *kgo.Record) {
			last = r.Offset
			t, p, at, ok := parseAnchorKey(string(r.Key))
			if !ok {
				return
			}
			tp := topicPartition{t, p}
			if r.Value == nil {
				delete(got[tp], at)
				return
			}
			if len(r.Value) != 8 {
				return
			}
			if got[tp] == nil {
				got[tp] = map[int64]int64{}
			}
			got[tp][at] = int64(binary.BigEndian.Uint64(r.Value))
		})
		if last >= end.Offset-1 {
			break
		}
	}
	l.mu.Lock()
	for tp, m := range got {
		if l.anchors[tp] == nil {
			l.anchors[tp] = map[int64]int64{}
		}
		for at, row := range m {
			l.anchors[tp][at] = row
		}
	}
	l.mu.Unlock()
	return nil
}

// writeAnchor records that the partition's entry at Kafka offset at begins
// at row row, durably, before Truncate deletes below it.
func (l *Log) writeAnchor(ctx context.Context, topic string, p int32, at, row int64) error {
	if err := l.ensureAnchorsTopic(ctx); err != nil {
		return err
	}
	v := binary.BigEndian.AppendUint64(nil, uint64(row))
	rec := &kgo.Record{Topic: l.anchorsTopic(), Partition: 0, Key: []byte(anchorKey(topic, p, at)), Value: v}
	if err := l.acl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return l.unavailable("record where the log of "+topic+" begins", err)
	}
	l.mu.Lock()
	tp := topicPartition{topic, p}
	if l.anchors[tp] == nil {
		l.anchors[tp] = map[int64]int64{}
	}
	l.anchors[tp][at] = row
	l.mu.Unlock()
	return nil
}

// dropAnchorsBelow removes the partition's anchors below at (best effort:
// they are small, and only a start at their offset would read them).
func (l *Log) dropAnchorsBelow(ctx context.Context, topic string, p int32, at int64) {
	l.mu.Lock()
	tp := topicPartition{topic, p}
	var old []int64
	for a := range l.anchors[tp] {
		if a < at {
			old = append(old, a)
			delete(l.anchors[tp], a)
		}
	}
	l.mu.Unlock()
	for _, a := range old {
		rec := &kgo.Record{Topic: l.anchorsTopic(), Partition: 0, Key: []byte(anchorKey(topic, p, a))}
		if err := l.acl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			l.log.Warn("could not remove an old anchor of the log", "topic", topic, "partition", p, "err", err)
			return
		}
	}
}

func (l *Log) ensureAnchorsTopic(ctx context.Context) error {
	l.mu.RLock()
	made := l.anchorsMade
	l.mu.RUnlock()
	if made {
		return nil
	}
	s := func(v string) *string { return &v }
	resp, err := l.admin.CreateTopic(ctx, 1, l.opts.ReplicationFactor, map[string]*string{"cleanup.policy": s("compact")}, l.anchorsTopic())
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return l.unavailable("create topic "+l.anchorsTopic(), err)
	}
	if err := l.waitServed(ctx, l.anchorsTopic(), 1); err != nil {
		return l.unavailable("wait for topic "+l.anchorsTopic(), err)
	}
	l.mu.Lock()
	l.anchorsMade = true
	l.mu.Unlock()
	return nil
}

// discover lists the log's topics and has the tailer follow those (and the
// partitions) it does not follow yet; a table whose topic is gone (another
// node dropped it) is forgotten.
func (l *Log) discover(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	// Asked of the brokers, not of the client's metadata cache (kadm's
	// ListTopics answers from it for up to MetadataMinAge): a table another
	// node made a moment ago must be found.
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(lctx, l.acl)
	if err != nil {
		return l.unavailable("list topics", err)
	}
	var add []*table
	var ns []int32
	seen := map[string]bool{}
	l.mu.Lock()
	for _, td := range resp.Topics {
		if td.Topic == nil || td.ErrorCode != 0 {
			continue
		}
		topic := *td.Topic
		id, ok := parseTopic(l.opts.TopicPrefix, topic)
		if !ok {
			continue
		}
		seen[topic] = true
		t := l.tables[id]
		if t == nil {
			t = &table{topic: topic, buckets: map[int32]*bucket{}, txns: map[uint64]*txnHold{}}
			l.tables[id] = t
			l.byTopic[topic] = t
		}
		if t.topic != topic {
			continue // a table id with two topics: keep the first
		}
		n := int32(len(td.Partitions))
		if n > t.followed() {
			add = append(add, t)
			ns = append(ns, n)
		}
	}
	var gone []string
	for topic, t := range l.byTopic {
		if !seen[topic] && t.partitions > 0 {
			gone = append(gone, topic)
		}
	}
	l.mu.Unlock()
	for i, t := range add {
		if err := l.addPartitions(lctx, t, ns[i]); err != nil {
			return err
		}
	}
	if len(gone) > 0 {
		l.forget(gone)
	}
	return nil
}

// followed counts the partitions the tailer follows, from 0. l.mu held.
func (t *table) followed() int32 {
	n := int32(0)
	for n < 1<<16 {
		st := t.buckets[n]
		if st == nil || !st.t.added {
			break
		}
		n++
	}
	return n
}

// forgetDeleted checks that the topics are gone and forgets their tables.
func (l *Log) forgetDeleted(topics []string) {
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.Timeout)
	defer cancel()
	ts, err := l.admin.ListTopics(ctx, topics...)
	if err != nil {
		return
	}
	var gone []string
	for _, topic := range topics {
		if d, ok := ts[topic]; !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			gone = append(gone, topic)
		}
	}
	l.forget(gone)
}

// forget drops the state of deleted topics: their waiters fail, their
// high watermarks read 0.
func (l *Log) forget(topics []string) {
	rm := map[string][]int32{}
	l.mu.Lock()
	for _, topic := range topics {
		t := l.byTopic[topic]
		if t == nil {
			continue
		}
		delete(l.byTopic, topic)
		for id, tt := range l.tables {
			if tt == t {
				delete(l.tables, id)
			}
		}
		for p, st := range t.buckets {
			rm[topic] = append(rm[topic], p)
			for at, w := range st.t.waits {
				w.aborted = true
				close(w.done)
				delete(st.t.waits, at)
			}
		}
	}
	l.notifyLocked()
	l.mu.Unlock()
	if len(rm) > 0 {
		l.tail.RemoveConsumePartitions(rm)
	}
}
