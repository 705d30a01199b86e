// Package bufpool provides a memory.Allocator that reuses the large buffers
// it has handed out once they are freed.
//
// A scan decodes every column of every row group into new Arrow buffers,
// about 8 MiB a column per million rows, and drops them as soon as DuckDB
// or the Flight writer has consumed the batch. With Go's allocator each of
// those buffers is a fresh large object: the runtime zeroes it (and the
// kernel faults its pages in when the heap has grown or been scavenged), a
// fifth of the CPU of an aggregate over a table. The Allocator keeps freed
// buffers of 64 KiB and more in power-of-two size classes (sync.Pool, so
// the garbage collector still reclaims what is not reused) and hands them
// out again.
//
// Promises:
//   - Allocate returns zeroed memory, as Go's allocator does: a reused
//     buffer is cleared, which costs a pass over warm memory instead of a
//     fault per page. No byte of one batch can reach another through a
//     buffer's padding or the slots under its nulls.
//   - Reallocate grows a buffer into a larger class and pools the old one
//     (a builder's buffer, which only the builder holds); grown in place,
//     the bytes past its old length are cleared too.
//   - Unzeroed is a view that skips the clearing, for a reader that writes
//     every byte it asks for and clears what it leaves unwritten (lake's
//     reads of fixed-width Parquet columns, which clear the slots under
//     nulls): clearing those buffers was a seventh of the CPU of an
//     aggregate.
//   - Free takes back only buffers whose capacity is one of its classes
//     (its own); anything else is left to the garbage collector, so a
//     buffer that is never freed, or freed to the wrong allocator, is not
//     a leak.
//   - It is safe for concurrent use.
//
// The price is the one of any free list: a buffer freed while still in use
// would be handed out twice. Arrow's reference counting frees a buffer when
// its last reference goes; builds with the race detector, and tests that
// call Poison (the engine's, where DuckDB reads the buffers), fill freed
// buffers with 0xdb before pooling them, so that a use after free shows up
// as wrong values.
package bufpool
