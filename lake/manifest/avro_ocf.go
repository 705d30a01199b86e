package manifest

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"sync"

	"github.com/golang/snappy"
	"github.com/hamba/avro/v2"
	"github.com/klauspost/compress/zstd"
)

// Manifests, manifest lists and index manifests are Avro object container
// files read whole into memory. They are decoded here block by block rather
// than through hamba's ocf.Decoder, whose record decoder refuses any bytes or
// string value over 1 MiB (Config.MaxByteSliceSize): Paimon puts data values
// into manifests (min/max keys, partition values, full statistics), and a
// manifest Java writes may legally hold values of many MiB. Every length is
// still bounded by what holds it:
//
//   - a block's compressed size cannot exceed the rest of the file;
//   - a decompressed block is at most maxAvroBlockBytes (1 GiB; Java's Avro
//     writer buffers a block in one byte array and starts a new block after
//     64 KB, so a legal block is one oversized record at most);
//   - a bytes/string/array length inside a block is refused when it exceeds
//     the smallest power of two (at least 1 MiB) not below the decompressed
//     block's size: it cannot be larger than the block that holds it, and a
//     corrupt length allocates at most twice the block.

// maxAvroBlockBytes bounds a decompressed Avro block.
const maxAvroBlockBytes = 1 << 30

// avroMagic starts every Avro object container file.
var avroMagic = []byte{'O', 'b', 'j', 1}

// ocfBlock is one data block of a container file: its record count and its
// decompressed bytes.
type ocfBlock struct {
	count int64
	data  []byte
}

// ocfCursor reads Avro's binary encoding from an in-memory file, checking
// every length against the bytes that remain.
type ocfCursor struct {
	b   []byte
	off int
}

func (c *ocfCursor) long() (int64, error) {
	var u uint64
	for shift := uint(0); ; shift += 7 {
		if c.off >= len(c.b) {
			return 0, io.ErrUnexpectedEOF
		}
		if shift >= 64 {
			return 0, errors.New("varint longer than 10 bytes")
		}
		x := c.b[c.off]
		c.off++
		u |= uint64(x&0x7f) << shift
		if x < 0x80 {
			break
		}
	}
	return int64(u>>1) ^ -int64(u&1), nil // zig-zag
}

// bytes reads n bytes (n checked against what remains).
func (c *ocfCursor) take(n int64, what string) ([]byte, error) {
	if n < 0 || n > int64(len(c.b)-c.off) {
		return nil, fmt.Errorf("%s of %d bytes at offset %d, but the file has %d bytes left", what, n, c.off, len(c.b)-c.off)
	}
	out := c.b[c.off : c.off+int(n)]
	c.off += int(n)
	return out, nil
}

func (c *ocfCursor) bytesValue(what string) ([]byte, error) {
	n, err := c.long()
	if err != nil {
		return nil, err
	}
	return c.take(n, what)
}

// parseOCF checks the framing of an object container file and returns its
// schema text, codec name and blocks (still compressed).
func parseOCF(data []byte) (schema []byte, codec string, blocks []ocfBlock, err error) {
	if !bytes.HasPrefix(data, avroMagic) {
		return nil, "", nil, errors.New("not an Avro object container file (bad magic)")
	}
	c := &ocfCursor{b: data, off: len(avroMagic)}
	meta := map[string][]byte{}
	for {
		n, err := c.long()
		if err != nil {
			return nil, "", nil, fmt.Errorf("header: %w", err)
		}
		if n == 0 {
			break
		}
		if n < 0 { // a negative count is followed by the block's byte size
			n = -n
			if _, err := c.long(); err != nil {
				return nil, "", nil, fmt.Errorf("header: %w", err)
			}
		}
		if n > int64(len(data)) {
			return nil, "", nil, fmt.Errorf("header: %d metadata entries in a file of %d bytes", n, len(data))
		}
		for i := int64(0); i < n; i++ {
			k, err := c.bytesValue("header key")
			if err != nil {
				return nil, "", nil, fmt.Errorf("header: %w", err)
			}
			v, err := c.bytesValue("header value")
			if err != nil {
				return nil, "", nil, fmt.Errorf("header: %w", err)
			}
			meta[string(k)] = v
		}
	}
	sync, err := c.take(16, "sync marker")
	if err != nil {
		return nil, "", nil, fmt.Errorf("header: %w", err)
	}
	schema = meta["avro.schema"]
	if len(schema) == 0 {
		return nil, "", nil, errors.New("header: no avro.schema")
	}
	codec = string(meta["avro.codec"])
	if codec == "" {
		codec = "null"
	}
	for c.off < len(data) {
		count, err := c.long()
		if err != nil {
			return nil, "", nil, fmt.Errorf("block %d: %w", len(blocks), err)
		}
		size, err := c.long()
		if err != nil {
			return nil, "", nil, fmt.Errorf("block %d: %w", len(blocks), err)
		}
		if count < 0 {
			return nil, "", nil, fmt.Errorf("block %d: negative record count %d", len(blocks), count)
		}
		raw, err := c.take(size, fmt.Sprintf("block %d", len(blocks)))
		if err != nil {
			return nil, "", nil, err
		}
		s, err := c.take(16, fmt.Sprintf("sync marker after block %d", len(blocks)))
		if err != nil {
			return nil, "", nil, err
		}
		if !bytes.Equal(s, sync) {
			return nil, "", nil, fmt.Errorf("block %d: sync marker does not match the header's", len(blocks))
		}
		if count > 0 {
			blocks = append(blocks, ocfBlock{count: count, data: raw})
		}
	}
	return schema, codec, blocks, nil
}

var zstdBlockDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxAvroBlockBytes))
})

// decompressBlock undoes the file's codec on one block, refusing output over
// maxAvroBlockBytes.
func decompressBlock(codec string, raw []byte) ([]byte, error) {
	switch codec {
	case "null":
		return raw, nil
	case "zstandard":
		d, err := zstdBlockDecoder()
		if err != nil {
			return nil, err
		}
		return d.DecodeAll(raw, nil)
	case "deflate":
		r := flate.NewReader(bytes.NewReader(raw))
		defer r.Close()
		out, err := io.ReadAll(io.LimitReader(r, maxAvroBlockBytes+1))
		if err != nil {
			return nil, err
		}
		if len(out) > maxAvroBlockBytes {
			return nil, fmt.Errorf("deflate block decompresses to more than %d bytes", maxAvroBlockBytes)
		}
		return out, nil
	case "snappy":
		if len(raw) < 4 {
			return nil, errors.New("snappy block without its checksum")
		}
		n, err := snappy.DecodedLen(raw[:len(raw)-4])
		if err != nil {
			return nil, err
		}
		if n > maxAvroBlockBytes {
			return nil, fmt.Errorf("snappy block decompresses to %d bytes, more than %d", n, maxAvroBlockBytes)
		}
		out, err := snappy.Decode(nil, raw[:len(raw)-4])
		if err != nil {
			return nil, err
		}
		if crc32.ChecksumIEEE(out) != binary.BigEndian.Uint32(raw[len(raw)-4:]) {
			return nil, errors.New("snappy block checksum mismatch")
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported Avro codec %q", codec)
}

// avroAPIs holds one frozen hamba config per size class (a power of two of
// at least 1 MiB): a value within a block of size n is allowed up to the
// class of n. Freezing is costly (it holds the decoder caches), so each class
// is frozen once.
var avroAPIs sync.Map // int (class exponent) -> avro.API

func avroAPIFor(blockSize int) avro.API {
	exp := 20
	if blockSize > 1<<20 {
		exp = bits.Len(uint(blockSize - 1))
	}
	if api, ok := avroAPIs.Load(exp); ok {
		return api.(avro.API)
	}
	api, _ := avroAPIs.LoadOrStore(exp, avro.Config{MaxByteSliceSize: 1 << exp, MaxSliceAllocSize: 1 << exp}.Freeze())
	return api.(avro.API)
}

// avroSchemas caches parsed writer schemas by their text (each parsed into
// its own name cache: Paimon reuses record names across file kinds).
var avroSchemas sync.Map // string -> avro.Schema

func parseAvroSchema(text []byte) (avro.Schema, error) {
	if s, ok := avroSchemas.Load(string(text)); ok {
		return s.(avro.Schema), nil
	}
	s, err := avro.ParseWithCache(string(text), "", &avro.SchemaCache{})
	if err != nil {
		return nil, err
	}
	avroSchemas.Store(string(text), s)
	return s, nil
}

// decodeAvroRecords decodes every record of an in-memory object container
// file into generic maps.
func decodeAvroRecords(data []byte) ([]map[string]any, error) {
	schemaText, codec, blocks, err := parseOCF(data)
	if err != nil {
		return nil, err
	}
	sch, err := parseAvroSchema(schemaText)
	if err != nil {
		return nil, fmt.Errorf("writer schema: %w", err)
	}
	var out []map[string]any
	for bi, b := range blocks {
		block, err := decompressBlock(codec, b.data)
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", bi, err)
		}
		if b.count > int64(len(block)) { // every Paimon record takes at least one byte
			return nil, fmt.Errorf("block %d: %d records in %d bytes", bi, b.count, len(block))
		}
		r := bytes.NewReader(block)
		dec := avroAPIFor(len(block)).NewDecoder(sch, r)
		for i := int64(0); i < b.count; i++ {
			var v any
			if err := dec.Decode(&v); err != nil {
				return nil, fmt.Errorf("block %d, record %d: %w", bi, i, err)
			}
			m, ok := asRecord(v)
			if !ok {
				return nil, fmt.Errorf("record is %T", v)
			}
			out = append(out, m)
		}
	}
	return out, nil
}
