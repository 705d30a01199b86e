package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/flightd/flightd/lake/fileio"
)

// DataCacheBytes bounds the bytes of data files in an object store (S3) kept in memory:
// blocks of dataBlock bytes read by small reads (a point lookup's pages, footers, page
// indexes), least recently used out first. Data files are immutable and named once (see
// FooterCacheBytes), so a block never goes stale. A point lookup that finds its pages here
// makes no request to the store; without them each page it reads is a GET, a round trip.
// Reads of more than dataCacheMaxRead bytes (scans) go to the store and are not kept.
// Local files are not cached (the kernel's page cache does it). Set it before the first
// scan; 0 disables the cache.
var DataCacheBytes int64 = 256 << 20

const (
	dataBlock        = 64 << 10
	dataCacheMaxRead = 4 << 20
)

var (
	dataBlocks = newLRUCache[[]byte](&DataCacheBytes)
	dataSizes  = newLRUCache[int64](&DataCacheBytes) // file sizes, so that a cached file is not opened
)

// openData opens a data file for reading: on an object store through the block cache
// (the file is opened, a HEAD on S3, only when a read misses it and its size is not known).
func openData(ctx context.Context, fio fileio.FileIO, path string) (fileio.ReadAtSeekCloser, error) {
	if fileio.IsLocal(fio) || DataCacheBytes <= 0 {
		return fio.Open(ctx, path)
	}
	c := &cachedFile{ctx: ctx, fio: fio, path: path}
	if size, ok := dataSizes.get(path); ok {
		c.size = size
		c.SectionReader = io.NewSectionReader(c, 0, size)
		return c, nil
	}
	f, err := fio.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		f.Close()
		return nil, err
	}
	c.f, c.size = f, size
	c.SectionReader = io.NewSectionReader(c, 0, size)
	dataSizes.put(path, 64, size)
	return c, nil
}

// cachedFile reads an immutable data file through dataBlocks; its Read,
// Seek and Size (which parquet's reader asks for) are the SectionReader's
// over its ReadAt.
type cachedFile struct {
	*io.SectionReader
	ctx  context.Context
	fio  fileio.FileIO
	path string
	size int64
	mu   sync.Mutex
	f    fileio.ReadAtSeekCloser // opened on the first miss
}

func (c *cachedFile) file() (fileio.ReadAtSeekCloser, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		f, err := c.fio.Open(c.ctx, c.path)
		if err != nil {
			return nil, err
		}
		c.f = f
	}
	return c.f, nil
}

func blockKey(path string, i int64) string { return path + "\x00" + strconv.FormatInt(i, 10) }

func (c *cachedFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("lake: read %s: negative offset", c.path)
	}
	if off >= c.size {
		return 0, io.EOF
	}
	want := p
	if rest := c.size - off; int64(len(want)) > rest {
		want = want[:rest]
	}
	if len(want) > dataCacheMaxRead {
		f, err := c.file()
		if err != nil {
			return 0, err
		}
		return f.ReadAt(p, off)
	}
	first, last := off/dataBlock, (off+int64(len(want))-1)/dataBlock
	blocks := make([][]byte, last-first+1)
	miss := int64(-1) // the first block missing; the missing span is read with one request
	lastMiss := int64(-1)
	for i := first; i <= last; i++ {
		if b, ok := dataBlocks.get(blockKey(c.path, i)); ok {
			blocks[i-first] = b
		} else {
			if miss < 0 {
				miss = i
			}
			lastMiss = i
		}
	}
	if miss >= 0 {
		f, err := c.file()
		if err != nil {
			return 0, err
		}
		start := miss * dataBlock
		end := min((lastMiss+1)*dataBlock, c.size)
		buf := make([]byte, end-start)
		if n, err := f.ReadAt(buf, start); n < len(buf) {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		for i := miss; i <= lastMiss; i++ {
			b := buf[(i-miss)*dataBlock : min((i-miss+1)*dataBlock, int64(len(buf)))]
			dataBlocks.put(blockKey(c.path, i), int64(len(b)), b)
			blocks[i-first] = b
		}
	}
	n := 0
	for i, b := range blocks {
		from := int64(0)
		if i == 0 {
			from = off - first*dataBlock
		}
		n += copy(want[n:], b[from:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (c *cachedFile) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return nil
	}
	err := c.f.Close()
	c.f = nil
	return err
}
