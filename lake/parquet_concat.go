package lake

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/manifest"
)

// errNotConcatenable says that files cannot be joined byte for byte (a
// different Parquet schema, writer or key-value metadata, encryption,
// column chunks in other files); the caller decodes and re-encodes them.
var errNotConcatenable = errors.New("parquet files cannot be concatenated")

// concatParquet writes the row groups of srcs, in order, into one new
// Parquet file at dst without decoding them: each row group's column
// chunks are copied as they are (pages, compression, statistics) and the
// footer is the first file's with every row group's offsets moved to where
// its bytes now are. Page indexes and bloom filters of the inputs are not
// copied and their references are dropped (both are optional). It returns
// the new file's size and row count, or errNotConcatenable (having written
// nothing) when the files differ in schema, key-value metadata, writer or
// compression, or are small (see concatenable).
//
// Re-encoding is what append compaction spends its CPU on; copying costs
// about as much as reading the bytes.
func concatParquet(ctx context.Context, fio fileio.FileIO, dst string, srcs []string, codec compress.Compression) (size, rows int64, err error) {
	type source struct {
		f  fileio.ReadAtSeekCloser
		md *metadata.FileMetaData
	}
	var in []source
	defer func() {
		for _, s := range in {
			s.f.Close()
		}
	}()
	for _, p := range srcs {
		f, err := fio.Open(ctx, p)
		if err != nil {
			return 0, 0, err
		}
		pr, err := file.NewParquetReader(f)
		if err != nil {
			f.Close()
			return 0, 0, fmt.Errorf("%s: %w", p, err)
		}
		md := pr.MetaData()
		in = append(in, source{f: f, md: md})
		if err := concatenable(in[0].md, md, codec); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", p, err)
		}
	}
	if len(in) == 0 {
		return 0, 0, errNotConcatenable
	}

	w, err := fio.Create(ctx, dst)
	if err != nil {
		return 0, 0, err
	}
	cw := &countingWriter{w: w}
	defer func() {
		if err != nil {
			w.Close()
		}
	}()
	if _, err = cw.Write(parquetMagic); err != nil {
		return 0, 0, err
	}
	out := in[0].md
	groups := out.RowGroups[:0:0]
	for _, s := range in {
		for _, rg := range s.md.RowGroups {
			if err = ctx.Err(); err != nil {
				return 0, 0, err
			}
			if rg.NumRows == 0 {
				continue
			}
			// The chunks' bytes: from the first page of the first column to
			// the end of the last (writers put them one after another).
			start, end := int64(-1), int64(0)
			for _, cc := range rg.Columns {
				m := cc.MetaData
				cs := chunkStart(m)
				if start < 0 || cs < start {
					start = cs
				}
				end = max(end, cs+m.TotalCompressedSize)
			}
			if start < int64(len(parquetMagic)) || end > footerStart(s.md) {
				return 0, 0, fmt.Errorf("%w: row group bytes outside the data", manifest.ErrCorrupt)
			}
			delta := cw.n - start
			if _, err = io.Copy(cw, io.NewSectionReader(s.f, start, end-start)); err != nil {
				return 0, 0, err
			}
			for _, cc := range rg.Columns {
				m := cc.MetaData
				m.DataPageOffset += delta
				if m.DictionaryPageOffset != nil && *m.DictionaryPageOffset > 0 {
					v := *m.DictionaryPageOffset + delta
					m.DictionaryPageOffset = &v
				}
				if m.IndexPageOffset != nil && *m.IndexPageOffset > 0 {
					v := *m.IndexPageOffset + delta
					m.IndexPageOffset = &v
				}
				cc.FileOffset = chunkStart(m) // as arrow-go writes it
				m.BloomFilterOffset, m.BloomFilterLength = nil, nil
				cc.OffsetIndexOffset, cc.OffsetIndexLength = nil, nil
				cc.ColumnIndexOffset, cc.ColumnIndexLength = nil, nil
			}
			if rg.FileOffset != nil {
				v := start + delta
				rg.FileOffset = &v
			}
			ord := int16(len(groups))
			rg.Ordinal = &ord
			groups = append(groups, rg)
			rows += rg.NumRows
		}
	}
	out.RowGroups = groups
	out.NumRows = rows
	n, err := out.WriteTo(cw, nil)
	if err != nil {
		return 0, 0, err
	}
	if err = binary.Write(cw, binary.LittleEndian, uint32(n)); err != nil {
		return 0, 0, err
	}
	if _, err = cw.Write(parquetMagic); err != nil {
		return 0, 0, err
	}
	if err = w.Close(); err != nil {
		return 0, 0, err
	}
	return cw.n, rows, nil
}

var parquetMagic = []byte("PAR1")

// minConcatRowGroupRows is the fewest rows of a file concatParquet copies,
// and of each of its row groups but the last. A slow table's rounds are tiny
// files, and joining them as they are would grow a file by a tiny row group
// per round (each one footer entries and a reader's setup); they are cheap
// to re-encode instead. A busy table's rounds write full 128K-row groups
// and a remainder, so a joined file has at most one small group per input
// of 16K rows or more.
const minConcatRowGroupRows = maxRowGroupRows / 8

// concatenable checks that b's row groups can follow a's in one file: the
// same schema (names, types, field ids), key-value metadata (the Arrow
// schema) and writer (readers interpret statistics by the writer's
// version), no encryption, every column chunk in the file itself and
// compressed with codec (the table's file.compression: a changed option
// takes effect when files are compacted), and at least minConcatRowGroupRows
// rows in b and in each of its row groups but the last.
func concatenable(a, b *metadata.FileMetaData, codec compress.Compression) error {
	switch {
	case a.IsSetEncryptionAlgorithm() || b.IsSetEncryptionAlgorithm():
		return fmt.Errorf("%w: encrypted", errNotConcatenable)
	case !a.Schema.Equals(b.Schema):
		return fmt.Errorf("%w: the Parquet schemas differ", errNotConcatenable)
	case !a.KeyValueMetadata().Equals(b.KeyValueMetadata()):
		return fmt.Errorf("%w: the key-value metadata differ", errNotConcatenable)
	case a.GetCreatedBy() != b.GetCreatedBy():
		return fmt.Errorf("%w: written by %q and %q", errNotConcatenable, a.GetCreatedBy(), b.GetCreatedBy())
	}
	rows := b.GetNumRows()
	if rows < minConcatRowGroupRows {
		return fmt.Errorf("%w: a file of %d rows", errNotConcatenable, rows)
	}
	for i, rg := range b.RowGroups {
		if last := i == len(b.RowGroups)-1; !last && rg.NumRows > 0 && rg.NumRows < minConcatRowGroupRows {
			return fmt.Errorf("%w: a row group of %d rows", errNotConcatenable, rg.NumRows)
		}
		for _, cc := range rg.Columns {
			if cc.IsSetFilePath() || cc.MetaData == nil || cc.IsSetCryptoMetadata() {
				return fmt.Errorf("%w: a column chunk outside the file", errNotConcatenable)
			}
			if compress.Compression(cc.MetaData.Codec) != codec {
				return fmt.Errorf("%w: compressed with %s, not %s", errNotConcatenable, compress.Compression(cc.MetaData.Codec), codec)
			}
		}
	}
	return nil
}

// chunkStart is where a column chunk's first page is: its dictionary page,
// if it has one, else its first data page. (m is arrow-go's thrift
// ColumnMetaData, whose package is internal.)
func chunkStart[M interface {
	GetDataPageOffset() int64
	GetDictionaryPageOffset() int64
}](m M) int64 {
	if d := m.GetDictionaryPageOffset(); d > 0 {
		return min(d, m.GetDataPageOffset())
	}
	return m.GetDataPageOffset()
}

// footerStart is where a file's footer begins.
func footerStart(md *metadata.FileMetaData) int64 {
	return md.GetSourceFileSize() - int64(md.Size()) - 8
}
