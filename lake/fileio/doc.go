// Package fileio is the storage under the lake: the FileIO interface, its local
// implementation (Local, over the operating system's file system or another FS), and Rooted,
// which confines a FileIO to a root directory (a warehouse). The S3 implementation is in
// package fileio/s3, so that only its importers link the AWS SDK; package fileio/fileiotest
// is the conformance suite every implementation runs.
//
// What a FileIO promises (fileiotest checks each point on every implementation):
//
//   - Paths are slash-separated and absolute for the implementation: a directory path for
//     Local, "/key" for S3 (whose directories are key prefixes). A Rooted FileIO takes paths
//     relative to its root as well.
//   - Not found: Read, Open and Version of a missing file fail with an error matching
//     fs.ErrNotExist that names the path. List of a missing directory is empty, Exists of a
//     missing path false, Remove and RemoveAll of one succeed; none of them is an error.
//   - Create streams a new file under a fresh name and makes the directories above it. It
//     never replaces a file: if the path exists, Create (Local, O_EXCL) or Close (S3, a
//     conditional upload) fails with fs.ErrExist and the file keeps its content. On S3 the
//     object appears only when Close returns (a multipart upload above the part size,
//     aborted on error); a local file is visible, growing, while it is written, so nothing
//     may read a data file before a commit names it.
//   - WriteAtomic replaces a file whole: a reader sees the old or the new content, never a
//     mix or a part (Local: a temporary file, fsynced, renamed over the path; S3: one PUT).
//   - CreateExclusive publishes a file whole or not at all, and only if the path does not
//     exist: of any number of creators of one path, in this process or others, exactly one
//     succeeds and every other fails with an error matching fs.ErrExist, whatever bytes each
//     wrote (the same included). Local: a temporary file, fsynced, then link(2); S3: PutObject
//     with If-None-Match: *, where a request retried after a lost response recognises its own
//     object by a token in its metadata (see fileio/s3 for servers without conditional writes,
//     where this does not hold).
//   - List returns a directory's entries sorted by name: files with their size and
//     modification time, directories (IsDir, no time) whether made by MkdirAll or holding
//     files. Exists is true for files and directories alike.
//   - Version identifies a file's content in one stat or HEAD: it changes when the file is
//     replaced by WriteAtomic, or removed and created again with other bytes (Local: size,
//     modification time and inode number; S3: ETag and size).
//   - Remove removes a file, RemoveAll a tree or a file, and nothing beside it.
//   - Durability on a local disk (what survives a power cut): a file's content is fsynced
//     before Close of Create returns, before WriteAtomic renames and before CreateExclusive
//     links; every directory that Create, WriteAtomic, CreateExclusive or MkdirAll creates is
//     synced into its parent before the call returns, RemoveAll syncs the parent of what it
//     removed, and RenameDir both parents. The name of a file created, replaced or removed
//     is durable only once SyncDir of its directory returned: callers group those, one
//     SyncDir per directory before the commit that names the files (SyncDirs syncs a set at
//     once). SyncDir of a missing directory fails with fs.ErrNotExist. On S3 a completed PUT
//     or DELETE is durable and SyncDir does nothing.
//   - DirRenamer (Local) renames a directory in one step, never over an existing name (an
//     empty directory included: fs.ErrExist). An object store cannot, and is not one.
//   - Contexts: Local does not look at ctx (a local call is not cancelled midway); S3 runs
//     every request under the ctx of the call, a reader's under that of Open, a writer's
//     under that of Create.
//   - A FileIO is safe for concurrent use; ReadAt of an opened file may be called
//     concurrently.
//
// Confinement (Rooted): every path is cleaned (as a file path, or as an object key over an
// ObjectStore, whose URLs are accepted too) and must then be the root or lie below it and
// hold no NUL byte, else the call fails with ErrInvalidPath before the underlying FileIO sees
// it; RemoveAll and RenameDir of the root itself are refused alike. Over a Local on the
// operating system's file system the check is also made by the file system: each path is
// resolved beneath an os.Root of the root directory, so that no symbolic link (pointing
// outside, or absolute), "..", or directory swapped for such a link while in use leads
// outside; relative links that stay inside are followed, and removing or replacing a link
// acts on the link. Errors of the underlying FileIO, of opened files and of files being
// written name paths relative to the root, never the server's directory or s3://bucket/prefix.
package fileio
