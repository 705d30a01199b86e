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
	sys  *sysOps

	mu       sync.Mutex
	activeID uint64   // the segment being written; ids below it are sealed
	active   *os.File // nil until the first write after open or rotation
	written  int64    // bytes in active
	readers  map[uint64]*segReader
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
func openSegments(dir string, size int64, sync bool, sys *sysOps) (*segments, error) {
	d := filepath.Join(dir, segDirName)
	if err := sys.mkdirAll(d, sync); err != nil {
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
	return &segments{dir: d, sync: sync, size: size, sys: sys, activeID: next, readers: map[uint64]*segReader{}}, nil
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
//
// A failed write seals the segment (the next write starts a new one): after a failed
// write or fdatasync the file's unsynced pages are in an unknown state, and a later
// fdatasync may report success without having written them (Linux clears the error
// once it is reported). Records already acknowledged in the sealed segment were synced
// before; the failed group's bytes are garbage nothing points at, collected with the
// segment.
func (s *segments) write(recs [][]byte) (ptrs []segPtr, err error) {
	defer func() {
		if err != nil {
			s.seal()
		}
	}()
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
		f, err := s.sys.create(filepath.Join(s.dir, segName(id)))
		if err != nil {
			return nil, fmt.Errorf("create segment: %w", err)
		}
		if s.sync { // the file's name must survive a power loss before anything points at it
			if err := s.sys.syncDir(s.dir); err != nil {
				f.Close()
				return nil, err
			}
		}
		s.mu.Lock()
		s.active = f
		s.mu.Unlock()
	}
	ptrs = make([]segPtr, len(recs))
	for i, r := range recs {
		if _, err := s.sys.writeAt(s.active, r, s.written); err != nil {
			return nil, fmt.Errorf("write segment %d: %w", id, err)
		}
		ptrs[i] = segPtr{seg: id, off: uint64(s.written), len: uint32(len(r)), crc: crc32.Checksum(r, crcTable)}
		s.written += int64(len(r))
	}
	if s.sync {
		if err := s.sys.fdatasync(s.active); err != nil {
			return nil, fmt.Errorf("sync segment %d: %w", id, err)
		}
	}
	return ptrs, nil
}

// seal ends the active segment after a failed write: later writes go to a new file,
// created and synced from scratch. A file that could not be created or synced is left
// without records, and collectSegments deletes it.
func (s *segments) seal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active != nil {
		_ = s.active.Close() // the write already failed; this close adds nothing
		s.active = nil
	}
	s.written = 0
	s.activeID++
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
