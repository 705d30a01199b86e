package kafkalog

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightd/flightd/logstore"
)

// headerKey names the one header every record of the log carries.
const headerKey = "flightd.entry"

// entryHeader is what a record says of the log entry it holds (or a part of):
//
//	0x01 (version) | base (int64 BE) | rows (int64 BE) | part (uint32 BE) | parts (uint32 BE)
//
// base and rows are the entry's row offsets (the offsets flightd's log
// speaks: lakestream.log-offsets, _SEQUENCE_NUMBER order); an entry larger
// than Options.MaxRecordBytes is cut into parts records, in order, in one
// transaction.
type entryHeader struct {
	base, rows  int64
	part, parts uint32
}

const headerLen = 1 + 8 + 8 + 4 + 4

func (h entryHeader) encode() []byte {
	b := make([]byte, headerLen)
	b[0] = 1
	binary.BigEndian.PutUint64(b[1:], uint64(h.base))
	binary.BigEndian.PutUint64(b[9:], uint64(h.rows))
	binary.BigEndian.PutUint32(b[17:], h.part)
	binary.BigEndian.PutUint32(b[21:], h.parts)
	return b
}

// decodeHeader reads the record's entry header; a record without one, or
// with one that does not decode, is corruption.
func decodeHeader(r *kgo.Record) (entryHeader, error) {
	var raw []byte
	found := false
	for _, h := range r.Headers {
		if h.Key == headerKey {
			raw, found = h.Value, true
			break
		}
	}
	if !found {
		return entryHeader{}, corruptf(r, "no %s header", headerKey)
	}
	if len(raw) != headerLen || raw[0] != 1 {
		return entryHeader{}, corruptf(r, "%s header of %d bytes, version %d", headerKey, len(raw), firstByte(raw))
	}
	h := entryHeader{
		base:  int64(binary.BigEndian.Uint64(raw[1:])),
		rows:  int64(binary.BigEndian.Uint64(raw[9:])),
		part:  binary.BigEndian.Uint32(raw[17:]),
		parts: binary.BigEndian.Uint32(raw[21:]),
	}
	if h.base < 0 || h.rows < 1 || h.parts < 1 || h.part >= h.parts {
		return entryHeader{}, corruptf(r, "header base %d rows %d part %d/%d", h.base, h.rows, h.part, h.parts)
	}
	return h, nil
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}

func corruptf(r *kgo.Record, format string, args ...any) error {
	key := fmt.Appendf(nil, "%s/%d@%d", r.Topic, r.Partition, r.Offset)
	return &logstore.CorruptionError{Key: key, Err: fmt.Errorf(format, args...)}
}

// Topic names. A table's topic is
//
//	<prefix><database>.<table>.<id>
//
// database and table are the names the table had when its log began (for
// people reading a topic list; a rename keeps the topic), with every
// character Kafka does not allow, and '.', replaced by '_', and cut short to
// keep the name within Kafka's 249 characters. id is flightd's table id
// (lakestream.table-id, a uuid), escaped so that it decodes again: the log
// finds its tables by listing the topics under its prefix. A table dropped
// and created again has a new id, so a new topic.
const maxTopicLen = 249

func topicName(prefix, database, name, id string) string {
	eid := escapeID(id)
	room := maxTopicLen - len(prefix) - len(eid) - 1
	h := sanitize(database) + "." + sanitize(name)
	if database == "" || name == "" {
		h = sanitize(database + name)
	}
	if len(h) > room {
		h = h[:max(room, 0)]
	}
	if h == "" {
		return prefix + eid
	}
	return prefix + h + "." + eid
}

// parseTopic returns the table id of one of the log's topics.
func parseTopic(prefix, topic string) (string, bool) {
	rest, ok := strings.CutPrefix(topic, prefix)
	if !ok || rest == "" {
		return "", false
	}
	if i := strings.LastIndexByte(rest, '.'); i >= 0 {
		rest = rest[i+1:]
	}
	return unescapeID(rest)
}

func legal(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !legal(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

// escapeID keeps [A-Za-z0-9-] and writes every other byte as _XX (hex).
func escapeID(id string) string {
	var sb strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if legal(c) && c != '_' {
			sb.WriteByte(c)
		} else {
			fmt.Fprintf(&sb, "_%02x", c)
		}
	}
	return sb.String()
}

func unescapeID(s string) (string, bool) {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_':
			if i+3 > len(s) {
				return "", false
			}
			v, err := hex.DecodeString(s[i+1 : i+3])
			if err != nil {
				return "", false
			}
			sb.WriteByte(v[0])
			i += 2
		case legal(c):
			sb.WriteByte(c)
		default:
			return "", false
		}
	}
	return sb.String(), sb.Len() > 0
}

// partitionOf maps a bucket to its partition: bucket b is partition b.
func partitionOf(b logstore.Bucket) (int32, error) {
	if b.Bucket < 0 {
		return 0, fmt.Errorf("%w: bucket %d of table %q has no Kafka partition", logstore.ErrInvalidEntry, b.Bucket, b.Table)
	}
	return b.Bucket, nil
}
