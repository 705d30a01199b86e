package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Segment files hold the encoded records of large entries (see doc.go, "Segment
// files"). They are written with write(2) by the committer only and read with
// pread(2): Badger writes its value log through a shared memory mapping of a new
// sparse file, and on the virtual machines measured a page fault on such a mapping
// costs far more than write(2) (1 GiB: 0.9-3 s of kernel time against 0.3 s).

const segDirName = "segments"

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// segments manages the directory of segment files.
type segments struct {
	dir  string
	sync bool // fdatasync after each group (Options.SyncWrites)
	size int64

	mu       sync.Mutex
	activeID uint64   // the segment being written; ids below it are sealed
	active   *os.File // nil until the first write after open or rotation
	written  int64    // bytes in active
	readers  map[uint64]*segReader

	// Used by the committer only: whether active was opened with O_DIRECT,
	// and the aligned buffer a group's records are laid out in for it.
	direct bool
	buf    []byte
}

// Writes bypass the page cache (O_DIRECT) where the file system allows it.
// Measured at 1 M rows/s of 10k-row batches (~100 MB/s of log) on the
// 2-core VM: the kernel's copy of write(2) data into fresh page-cache pages
// was 15% of the server's CPU samples (copy_folio_from_iter_atomic), about
// 2.4 s per GiB; the pages were never read again, since readers find the
// entries in lakestream's cache. A direct write takes the records from one
// reused, aligned buffer: each record starts at a multiple of directAlign
// (the padding is at most 6% of a large entry), and a file system that
// refuses O_DIRECT (tmpfs) gets buffered writes.
const directAlign = 4096

// createSegment creates segment file path for writing, with O_DIRECT when
// the file system supports it.
func createSegment(path string) (f *os.File, direct bool, err error) {
	const flags = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	f, err = os.OpenFile(path, flags|unix.O_DIRECT, 0o644)
	if err == nil {
		return f, true, nil
	}
	if !errors.Is(err, unix.EINVAL) {
		return nil, false, err
	}
	f, err = os.OpenFile(path, flags, 0o644)
	return f, false, err
}

// alignUp rounds n up to a multiple of directAlign.
func alignUp(n int) int { return (n + directAlign - 1) &^ (directAlign - 1) }

// alignedBuf returns s.buf resized to n bytes, starting at an address that
// is a multiple of directAlign (reallocated when too small; a buffer that
// grew past maxKeptBuf for a large group is not kept for the next).
func (s *segments) alignedBuf(n int) []byte {
	if cap(s.buf) < n {
		b := make([]byte, n+directAlign)
		off := 0
		if r := int(uintptr(unsafe.Pointer(&b[0])) % directAlign); r != 0 {
			off = directAlign - r
		}
		s.buf = b[off : off+n : off+n]
	}
	return s.buf[:n]
}

const maxKeptBuf = 16 << 20

// writeDirect writes recs at s.written of the O_DIRECT active segment, each
// at an aligned offset, and returns their offsets.
func (s *segments) writeDirect(recs [][]byte) ([]int64, error) {
	n := 0
	for _, r := range recs {
		n += alignUp(len(r))
	}
	buf := s.alignedBuf(n)
	offs := make([]int64, len(recs))
	at := 0
	for i, r := range recs {
		copy(buf[at:], r)
		clear(buf[at+len(r) : at+alignUp(len(r))])
		offs[i] = s.written + int64(at)
		at += alignUp(len(r))
	}
	_, err := s.active.WriteAt(buf, s.written)
	if cap(s.buf) > maxKeptBuf {
		s.buf = nil
	}
	if err != nil {
		return nil, err
	}
	s.written += int64(n)
	return offs, nil
}

// segReader is an open read handle shared by concurrent reads; deleted
// segments are closed when their last read releases them.
type segReader struct {
	f       *os.File
	refs    int
	deleted bool
}

func segName(id uint64) string { return fmt.Sprintf("%016d.seg", id) }

func parseSegName(name string) (uint64, bool) {
	s, ok := strings.CutSuffix(name, ".seg")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseUint(s, 10, 64)
	return id, err == nil
}

// openSegments opens the directory; writes go to a new segment after the newest.
func openSegments(dir string, size int64, sync bool) (*segments, error) {
	d := filepath.Join(dir, segDirName)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return nil, err
	}
	ids, err := listSegments(d)
	if err != nil {
		return nil, err
	}
	next := uint64(1)
	if len(ids) > 0 {
		next = ids[len(ids)-1] + 1
	}
	return &segments{dir: d, sync: sync, size: size, activeID: next, readers: map[uint64]*segReader{}}, nil
}

func listSegments(dir string) ([]uint64, error) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ids []uint64
	for _, de := range des {
		if id, ok := parseSegName(de.Name()); ok && de.Type().IsRegular() {
			ids = append(ids, id)
		}
	}
	return ids, nil // ReadDir sorts by name, and names sort by id
}

// segPtr locates one record in a segment.
type segPtr struct {
	seg, off uint64
	len      uint32
	crc      uint32
}

// write appends recs to the active segment (rotating it first when full) and makes
// them durable. Only the committer calls it.
func (s *segments) write(recs [][]byte) ([]segPtr, error) {
	s.mu.Lock()
	if s.active != nil && s.written >= s.size {
		err := s.active.Close()
		s.active, s.written = nil, 0
		s.activeID++
		if err != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("close segment: %w", err)
		}
	}
	id := s.activeID
	s.mu.Unlock()

	if s.active == nil {
		f, direct, err := createSegment(filepath.Join(s.dir, segName(id)))
		if err != nil {
			return nil, fmt.Errorf("create segment: %w", err)
		}
		s.direct = direct
		if s.sync { // the file's name must survive a power loss before anything points at it
			if err := syncDir(s.dir); err != nil {
				f.Close()
				return nil, err
			}
		}
		s.mu.Lock()
		s.active = f
		s.mu.Unlock()
	}
	ptrs := make([]segPtr, len(recs))
	if s.direct {
		offs, err := s.writeDirect(recs)
		if err != nil {
			return nil, fmt.Errorf("write segment %d: %w", id, err)
		}
		for i, r := range recs {
			ptrs[i] = segPtr{seg: id, off: uint64(offs[i]), len: uint32(len(r)), crc: crc32.Checksum(r, crcTable)}
		}
	} else {
		for i, r := range recs {
			if _, err := s.active.WriteAt(r, s.written); err != nil {
				return nil, fmt.Errorf("write segment %d: %w", id, err)
			}
			ptrs[i] = segPtr{seg: id, off: uint64(s.written), len: uint32(len(r)), crc: crc32.Checksum(r, crcTable)}
			s.written += int64(len(r))
		}
	}
	if s.sync {
		if err := unix.Fdatasync(int(s.active.Fd())); err != nil {
			return nil, fmt.Errorf("sync segment %d: %w", id, err)
		}
	}
	return ptrs, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// errSegmentGone: the segment was deleted, which only happens to segments whose
// entries are all below their buckets' log starts.
var errSegmentGone = errors.New("segment deleted")

var errChecksum = errors.New("checksum mismatch")

// read returns the record p points to, into buf (grown as needed), checked against
// its checksum.
func (s *segments) read(p segPtr, buf []byte) ([]byte, error) {
	r, err := s.acquire(p.seg)
	if err != nil {
		return nil, err
	}
	defer s.release(p.seg, r)
	if cap(buf) < int(p.len) {
		buf = make([]byte, p.len)
	}
	buf = buf[:p.len]
	if _, err := r.f.ReadAt(buf, int64(p.off)); err != nil {
		return nil, fmt.Errorf("read segment %d at %d: %w", p.seg, p.off, err)
	}
	if c := crc32.Checksum(buf, crcTable); c != p.crc {
		return nil, fmt.Errorf("%w: segment %d at %d: crc32c %08x, want %08x", errChecksum, p.seg, p.off, c, p.crc)
	}
	return buf, nil
}

func (s *segments) acquire(id uint64) (*segReader, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.readers[id]
	if r == nil {
		f, err := os.Open(filepath.Join(s.dir, segName(id)))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("segment %d: %w", id, errSegmentGone)
		}
		if err != nil {
			return nil, err
		}
		r = &segReader{f: f}
		s.readers[id] = r
	}
	r.refs++
	return r, nil
}

func (s *segments) release(id uint64, r *segReader) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.refs--
	if r.deleted && r.refs == 0 {
		r.f.Close()
	}
}

// sealed returns the ids of the segment files below the active one.
func (s *segments) sealed() ([]uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, err := listSegments(s.dir)
	var out []uint64
	for _, id := range ids {
		if id < s.activeID {
			out = append(out, id)
		}
	}
	return out, err
}

// remove deletes a sealed segment; reads holding it finish first.
func (s *segments) remove(id uint64) error {
	s.mu.Lock()
	if r := s.readers[id]; r != nil {
		delete(s.readers, id)
		r.deleted = true
		if r.refs == 0 {
			r.f.Close()
		}
	}
	s.mu.Unlock()
	err := os.Remove(filepath.Join(s.dir, segName(id)))
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return err
}

func (s *segments) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if s.active != nil {
		errs = append(errs, s.active.Close())
		s.active = nil
	}
	for id, r := range s.readers {
		if r.refs == 0 {
			errs = append(errs, r.f.Close())
		}
		delete(s.readers, id)
	}
	return errors.Join(errs...)
}

// segment key := 0x03 | uint64 BE segment id | uvarint(len(table)) | table | uint32 BE bucket
//
// value: uvarint(end), the exclusive end offset of the bucket's last entry in the
// segment. A sealed segment is garbage once every bucket it names has its log start
// at or above that end (or is gone).
func segKey(id uint64, b Bucket) []byte {
	return appendBucket(binary.BigEndian.AppendUint64([]byte{prefixSegment}, id), b)
}

func parseSegKey(k []byte) (uint64, Bucket, error) {
	if len(k) < 9 || k[0] != prefixSegment {
		return 0, Bucket{}, errBadKey
	}
	b, rest, err := cutBucket(k[9:])
	if err != nil || len(rest) != 0 {
		return 0, Bucket{}, errBadKey
	}
	return binary.BigEndian.Uint64(k[1:9]), b, nil
}
