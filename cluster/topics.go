package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// nodesConfigs: the node records are compacted to each node's latest, and
// the active segment rolls every ten minutes so that compaction (which
// never touches the active segment) keeps the topic small for the next
// node that reads it from the start.
func nodesConfigs() map[string]*string {
	s := func(v string) *string { return &v }
	return map[string]*string{
		"cleanup.policy": s("compact"),
		"segment.ms":     s("600000"),
	}
}

// ensureTopic creates the topic with n partitions unless it exists, waits
// until each of its partitions has a leader, and returns how many it has.
func (m *Member) ensureTopic(ctx context.Context, topic string, n int32, configs map[string]*string) (int32, error) {
	ctx, cancel := context.WithTimeout(ctx, m.o.SessionTimeout)
	defer cancel()
	resp, err := m.admin.CreateTopic(ctx, n, m.o.Replication, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, m.unavailable("create topic "+topic, err)
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		ts, err := m.admin.ListTopics(ctx, topic)
		if err == nil {
			d, ok := ts[topic]
			switch {
			case !ok:
				err = errors.New("not listed")
			case d.Err != nil:
				err = d.Err
			case len(d.Partitions) == 0:
				err = errors.New("no partitions")
			}
			for _, p := range d.Partitions {
				if err == nil && (p.Err != nil || p.Leader < 0) {
					err = fmt.Errorf("partition %d has no leader (%v)", p.Partition, p.Err)
				}
			}
			if err == nil {
				return int32(len(d.Partitions)), nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return 0, m.unavailable("wait for the partitions of "+topic, fmt.Errorf("%w (last: %v)", ctx.Err(), last))
		case <-tick.C:
		}
	}
}

// unavailable wraps a failure to reach the brokers.
func (m *Member) unavailable(what string, err error) error {
	return fmt.Errorf("cluster: %s: the Kafka brokers %s did not answer: %w", what, m.brokers(), err)
}
