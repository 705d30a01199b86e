// Package cluster gives a flightd node its membership in a cluster of
// flightd nodes that share one warehouse and one Kafka cluster, and decides
// which node owns which table. It builds on a Kafka consumer group, with no
// consensus of its own.
//
// # Slots and ownership
//
// A table belongs to a slot: the 32-bit FNV-1a hash of its id modulo the
// number of slots (SlotOf). The slots are the partitions of the topic
// <prefix>_flightd_owners (OwnersTopic), which Join creates with
// Options.Slots partitions when it is missing; when it exists, its partition
// count is the number of slots, whatever Options.Slots says, so every node
// computes the same slots. Nothing is ever written to that topic: every node
// is a member of the consumer group of the same name, subscribed to it, and
// the partitions the group assigns to a node are the slots it owns. The group
// uses Kafka's classic protocol with the cooperative-sticky balancer (a
// rebalance moves only the slots that must move, and the others stay owned
// through it) and static membership: the node id is the member's
// group.instance.id.
//
// A node owns a slot (Member.Owns) while the group has assigned it to the
// node, and only while the node is Ready: in the group, and the group
// coordinator answered one of its heartbeats (or join or sync requests)
// less than Options.SessionTimeout ago, counted from when that request was
// sent. Past that the coordinator may have expired the node's session and
// given its slots to others, so a node cut off from Kafka stops owning
// anything on its own, whatever franz-go has or has not reported yet. A
// revocation takes the slots out of the owned set before the group is told
// they are free.
//
// Ownership only saves work: it is never the fence. Two nodes may both
// believe they own a table during a handover, for up to the session timeout
// (a node that is cut off keeps believing until its own clock says the
// session timeout has passed since its last answered heartbeat, while the
// coordinator counts from when it received that heartbeat; and an answer
// from a broker that has just stopped being the coordinator counts too).
// Whatever must not happen twice is fenced elsewhere: the lake's conditional
// snapshot commit, the log's transactional writer.
//
// Changed is closed, and replaced, whenever the set of slots Owns reports
// for this node changes: on an assignment, a revocation, a lost session,
// Close, and when the node turns not Ready or Ready again. The time rule is
// checked every Options.Heartbeat, so Changed may fire up to one Heartbeat
// after Owns already answers the new way.
//
// # Joining and leaving
//
// Join returns once the node is in the group (it has had its first
// assignment, which may be empty: a node joining a stable group gets its
// slots in the second round of the cooperative rebalance, and Changed tells
// when) and has read the node records back to its own first one. It waits
// as long as ctx allows; a join can take about a session timeout when a
// crashed node is still in the group.
//
// Close leaves at once: the node stops owning anything before Close does
// anything else, then it removes itself from the group by its instance id
// (LeaveGroup), so the others take its slots in the next rebalance rather
// than after the session timeout, and writes a tombstone for its node
// record. A node that dies without Close keeps its slots in the group until
// the coordinator expires its session (Options.SessionTimeout after its last
// heartbeat); a node restarted with the same id within that time normally
// gets the same slots back, without a rebalance (static membership).
//
// Node ids must be unique. A second process that joins with a node id
// already in the group takes the id over: the first one is fenced (Kafka's
// FENCED_INSTANCE_ID), leaves the group for good, stops publishing its
// record, and Ready says why (ErrFenced) until it is closed; its Close then
// neither leaves the group nor writes a tombstone, which would hit the
// newer process.
//
// # Node records
//
// Every node publishes a record to the compacted topic
// <prefix>_flightd_nodes (NodesTopic, one partition): key the node id,
// value JSON {id, address, started, heartbeat, slots, pins} where slots are
// the slots Owns reports at that moment and pins the oldest snapshot of
// each table a read of the node uses (Options.Pins; PinnedElsewhere tells
// the node that expires a table's snapshots which to keep), every Options.Heartbeat and at once
// when they change; Close writes a tombstone. Every node reads the topic
// from its start, so Nodes and Owner answer the same on every node once the
// records have propagated. Times are the publisher's clock: the nodes'
// clocks must agree to well within the session timeout.
//
// Nodes lists the nodes whose latest record is less than three session
// timeouts old, and this node itself (from its own state, not the topic).
// Owner answers from the records: this node if Owns says so, otherwise the
// node among the others whose latest record lists the slot, the latest
// heartbeat winning when two do during a handover; records older than three
// session timeouts are ignored.
//
// # Topics
//
// The topic names keep clear of the log's own topics under the same prefix
// (logstore/kafkalog names those <prefix><database>.<table>.<table id>): a
// name whose last dot-separated part is a valid escaped table id, such as
// <prefix>_flightd.owners, would be taken by the log for a table's topic.
// The nodes topic is created with cleanup.policy=compact and a segment.ms
// of ten minutes, so that compaction keeps it small. Options.Replication is
// the replication factor of both (-1: the brokers' default).
package cluster
