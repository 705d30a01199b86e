package lake

import (
	"container/list"
	"sync"

	"github.com/flightd/flightd/lake/manifest"
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

// lruCache keeps decoded immutable files by path, least recently used out
// first, within the byte limit *limit (read at each put; 0 disables it).
type lruCache[V any] struct {
	limit *int64
	mu    sync.Mutex
	size  int64
	order *list.List // front = most recently used
	items map[string]*list.Element
}

type lruItem[V any] struct {
	path string
	size int64
	v    V
}

func newLRUCache[V any](limit *int64) *lruCache[V] {
	return &lruCache[V]{limit: limit, order: list.New(), items: map[string]*list.Element{}}
}

func (c *lruCache[V]) get(path string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[path]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruItem[V]).v, true
}

// put caches v, which costs size bytes, unless it would take over a
// quarter of the limit.
func (c *lruCache[V]) put(path string, size int64, v V) {
	limit := *c.limit
	if limit <= 0 || size > limit/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[path]; ok {
		return
	}
	c.items[path] = c.order.PushFront(&lruItem[V]{path: path, size: size, v: v})
	c.size += size
	for c.size > limit {
		el := c.order.Back()
		old := el.Value.(*lruItem[V])
		c.order.Remove(el)
		delete(c.items, old.path)
		c.size -= old.size
	}
}

type cachedManifest struct {
	entries []manifest.Entry    // a manifest (non-nil, possibly empty)
	metas   []manifest.FileMeta // or a manifest list (non-nil, possibly empty)
}

// emptyCost is what a cached manifest costs besides its entries.
const emptyCost = 64

var decodedManifests = newLRUCache[*cachedManifest](&ManifestCacheBytes)

// entriesSize estimates the memory of decoded manifest entries.
func entriesSize(es []manifest.Entry) int64 {
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

func metasSize(ms []manifest.FileMeta) int64 {
	n := int64(0)
	for i := range ms {
		n += 160 + int64(len(ms[i].FileName)+len(ms[i].PartitionStats.MinValues)+len(ms[i].PartitionStats.MaxValues))
	}
	return n
}
