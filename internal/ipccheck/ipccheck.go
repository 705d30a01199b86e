// Package ipccheck checks an Arrow IPC schema message before arrow-go reads
// it. arrow-go (v18.8.0) sizes slices from the vector lengths a schema
// message claims (its fields and custom metadata) without checking them
// against the message: a few bytes claiming billions of fields end the
// process with "fatal error: out of memory", which no recover catches.
// CheckSchemaMessage refuses any vector longer than the message can hold.
package ipccheck

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrMalformed marks a schema message that claims more than it holds.
var ErrMalformed = errors.New("ipccheck: malformed Arrow IPC schema message")

const (
	headerSchema = 1 // MessageHeader.Schema
	maxTables    = 1 << 16
	maxDepth     = 64
)

type fb struct {
	buf    []byte
	tables int
}

func (b *fb) u32(p int) (int, bool) {
	if p < 0 || p+4 > len(b.buf) {
		return 0, false
	}
	return int(binary.LittleEndian.Uint32(b.buf[p:])), true
}

// field returns the position of field i of the table at t, 0 when absent.
// Positions wrap around at 2^32 and a vtable may have an odd size, as in the
// flatbuffers runtime arrow-go reads with.
func (b *fb) field(t, i int) (int, error) {
	so, ok := b.u32(t)
	if !ok {
		return 0, ErrMalformed
	}
	vt := int(uint32(int32(uint32(t)) - int32(uint32(so))))
	if vt+4 > len(b.buf) {
		return 0, ErrMalformed
	}
	size := int(binary.LittleEndian.Uint16(b.buf[vt:]))
	slot := 4 + 2*i
	if slot >= size {
		return 0, nil
	}
	if vt+slot+2 > len(b.buf) {
		return 0, ErrMalformed
	}
	off := int(binary.LittleEndian.Uint16(b.buf[vt+slot:]))
	if off == 0 {
		return 0, nil
	}
	return int(uint32(t) + uint32(off)), nil
}

// ref follows the offset stored at p.
func (b *fb) ref(p int) (int, error) {
	o, ok := b.u32(p)
	if !ok {
		return 0, ErrMalformed
	}
	return int(uint32(p) + uint32(o)), nil
}

// vector returns the position of the first element and the length of the
// vector in field i of table t (of elemSize-byte elements), checking that
// the message holds it.
func (b *fb) vector(t, i, elemSize int) (start, n int, err error) {
	p, err := b.field(t, i)
	if err != nil || p == 0 {
		return 0, 0, err
	}
	v, err := b.ref(p)
	if err != nil {
		return 0, 0, err
	}
	n, ok := b.u32(v)
	if !ok || n > (len(b.buf)-v-4)/elemSize {
		return 0, 0, fmt.Errorf("%w: a vector of %d elements in %d bytes", ErrMalformed, n, len(b.buf))
	}
	return v + 4, n, nil
}

func (b *fb) table(p int) (int, error) {
	if b.tables++; b.tables > maxTables {
		return 0, fmt.Errorf("%w: more than %d tables", ErrMalformed, maxTables)
	}
	return b.ref(p)
}

// fields checks a vector of Field tables (slot i of table t) and their
// children and custom metadata.
func (b *fb) fields(t, i, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: fields nested deeper than %d", ErrMalformed, maxDepth)
	}
	start, n, err := b.vector(t, i, 4)
	if err != nil {
		return err
	}
	for k := range n {
		f, err := b.table(start + 4*k)
		if err != nil {
			return err
		}
		if _, _, err := b.vector(f, 6, 4); err != nil { // custom_metadata
			return err
		}
		if err := b.fields(f, 5, depth+1); err != nil { // children
			return err
		}
	}
	return nil
}

// CheckSchemaMessage checks the flatbuffer metadata of one IPC message (a
// FlightData's data_header, or an IPC stream message without its framing).
// Messages other than schemas pass.
func CheckSchemaMessage(meta []byte) error {
	b := &fb{buf: meta}
	root, err := b.table(0)
	if err != nil {
		return err
	}
	if _, _, err := b.vector(root, 4, 4); err != nil { // Message.custom_metadata
		return err
	}
	ht, err := b.field(root, 1)
	if err != nil || ht == 0 || ht >= len(meta) || meta[ht] != headerSchema {
		return err
	}
	hp, err := b.field(root, 2)
	if err != nil || hp == 0 {
		return err
	}
	schema, err := b.table(hp)
	if err != nil {
		return err
	}
	if _, _, err := b.vector(schema, 2, 4); err != nil { // Schema.custom_metadata
		return err
	}
	if _, _, err := b.vector(schema, 3, 8); err != nil { // Schema.features
		return err
	}
	return b.fields(schema, 1, 0)
}

// CheckStream checks the first message of an IPC stream (the schema).
func CheckStream(stream []byte) error {
	if len(stream) >= 4 && binary.LittleEndian.Uint32(stream) == 0xFFFFFFFF {
		stream = stream[4:]
	}
	if len(stream) < 4 {
		return nil // arrow-go reports it
	}
	n := int(int32(binary.LittleEndian.Uint32(stream)))
	if n <= 0 || n > len(stream)-4 {
		return nil // arrow-go reports it
	}
	return CheckSchemaMessage(stream[4 : 4+n])
}
