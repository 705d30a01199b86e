package lake

import (
	"container/list"
	"sync"
)

// Manifests and manifest lists are immutable: a name is never written twice
// (Java and flightd both name them by a random UUID), so their decoded
// contents can be kept across scans. Decoding is what a query of a
// committed table spends most of its planning time on (Avro header parsing
// in particular), so the cache turns repeated scans' planning into map
// lookups. A file that changes on disk after it was cached (corruption)
// goes unnoticed until it is evicted or the server restarts.

// ManifestCacheBytes bounds the decoded manifests kept in memory (an
// estimate of their size). Set it before the first scan; 0 disables the cache.
var ManifestCacheBytes int64 = 64 << 20

type decodedCache struct {
	mu    sync.Mutex
	size  int64
	order *list.List // front = most recently used
	items map[string]*list.Element
}

type cachedManifest struct {
	path    string
	size    int64
	entries []ManifestEntry    // a manifest (non-nil, possibly empty)
	metas   []ManifestFileMeta // or a manifest list (non-nil, possibly empty)
}

// emptyCost is what a cached manifest costs besides its entries.
const emptyCost = 64

var decodedManifests = &decodedCache{order: list.New(), items: map[string]*list.Element{}}

func (c *decodedCache) get(path string) (*cachedManifest, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[path]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cachedManifest), true
}

func (c *decodedCache) put(m *cachedManifest) {
	limit := ManifestCacheBytes
	if limit <= 0 || m.size > limit/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[m.path]; ok {
		return
	}
	c.items[m.path] = c.order.PushFront(m)
	c.size += m.size
	for c.size > limit {
		el := c.order.Back()
		old := el.Value.(*cachedManifest)
		c.order.Remove(el)
		delete(c.items, old.path)
		c.size -= old.size
	}
}

// entriesSize estimates the memory of decoded manifest entries.
func entriesSize(es []ManifestEntry) int64 {
	n := int64(0)
	for i := range es {
		f := &es[i].File
		n += 320 + int64(len(es[i].Partition)+len(f.FileName)+len(f.MinKey)+len(f.MaxKey)+
			len(f.KeyStats.MinValues)+len(f.KeyStats.MaxValues)+8*len(f.KeyStats.NullCounts)+
			len(f.ValueStats.MinValues)+len(f.ValueStats.MaxValues)+8*len(f.ValueStats.NullCounts)+
			len(f.EmbeddedIndex))
		for _, s := range f.ExtraFiles {
			n += int64(len(s)) + 16
		}
		for _, s := range f.ValueStatsCols {
			n += int64(len(s)) + 16
		}
	}
	return n
}

func metasSize(ms []ManifestFileMeta) int64 {
	n := int64(0)
	for i := range ms {
		n += 160 + int64(len(ms[i].FileName)+len(ms[i].PartitionStats.MinValues)+len(ms[i].PartitionStats.MaxValues))
	}
	return n
}
