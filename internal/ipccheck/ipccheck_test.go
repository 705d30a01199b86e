package ipccheck

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

func schemaStream(t *testing.T) []byte {
	md := arrow.NewMetadata([]string{"k"}, []string{"v"})
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: md},
		{Name: "l", Type: arrow.ListOf(arrow.StructOf(arrow.Field{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true})), Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
	}, &md)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestWellFormedSchemaPasses(t *testing.T) {
	b := schemaStream(t)
	if err := CheckStream(b); err != nil {
		t.Fatal(err)
	}
	if _, err := ipc.NewReader(bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
}

// A schema message claiming 2^31 fields made arrow-go allocate them all:
// "fatal error: out of memory" from a stream of a few hundred bytes.
func TestSchemaClaimingBillionsOfFieldsRefused(t *testing.T) {
	for _, slot := range []struct {
		name string
		path func(b *fb, schema int) (int, error) // position of the vector length
	}{
		{"fields", func(b *fb, schema int) (int, error) {
			p, err := b.field(schema, 1)
			if err != nil {
				return 0, err
			}
			return b.ref(p)
		}},
		{"schema metadata", func(b *fb, schema int) (int, error) {
			p, err := b.field(schema, 2)
			if err != nil {
				return 0, err
			}
			return b.ref(p)
		}},
		{"field metadata", func(b *fb, schema int) (int, error) {
			p, err := b.field(schema, 1)
			if err != nil {
				return 0, err
			}
			v, err := b.ref(p)
			if err != nil {
				return 0, err
			}
			f, err := b.ref(v + 4)
			if err != nil {
				return 0, err
			}
			p, err = b.field(f, 6)
			if err != nil {
				return 0, err
			}
			return b.ref(p)
		}},
	} {
		t.Run(slot.name, func(t *testing.T) {
			stream := schemaStream(t)
			meta := stream[8 : 8+int(binary.LittleEndian.Uint32(stream[4:]))]
			b := &fb{buf: meta}
			root, err := b.ref(0)
			if err != nil {
				t.Fatal(err)
			}
			hp, err := b.field(root, 2)
			if err != nil {
				t.Fatal(err)
			}
			schema, err := b.ref(hp)
			if err != nil {
				t.Fatal(err)
			}
			at, err := slot.path(b, schema)
			if err != nil || at == 0 {
				t.Fatalf("no vector: %v", err)
			}
			binary.LittleEndian.PutUint32(meta[at:], 1<<31-1)
			if err := CheckStream(stream); !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}
