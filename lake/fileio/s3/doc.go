// Package s3 is the lake's FileIO over an S3 bucket (AWS S3 or an S3-compatible server such
// as Versity S3 Gateway), through the AWS SDK for Go v2. It is, with cmd/flightd, the only
// package of flightd that imports the SDK.
//
// It keeps the contract of package fileio (fileiotest runs against a real server) in these
// terms:
//
//   - Paths are keys with a leading "/" ("/wh/db.db/t/snapshot/snapshot-1"); s3://bucket/key
//     and s3a://bucket/key of its own bucket are accepted too, another bucket's are refused.
//     Directories are key prefixes: MkdirAll writes a zero-byte "dir/" marker object (as
//     Hadoop S3A does) unless something is under the prefix, List shows sub-prefixes as
//     directories and hides the markers. A FileIO is a fileio.ObjectStore, so a Rooted one
//     takes URLs and names keys relative to its root in errors.
//   - CreateExclusive is a PutObject with If-None-Match: *: the server publishes the object
//     only if the key is free, so of racing creators exactly one wins and the others get
//     fs.ErrExist. Each call tags its object with a random token (user metadata
//     x-amz-meta-flightd-create): when the SDK retries a PUT whose response was lost and the
//     retry finds the key taken (412), a HEAD that finds the call's own token makes it a
//     success, and anything else a conflict. 409 ConditionalRequestConflict (another
//     conditional write of the key in flight) is tried again. A server that answers 501
//     fails with an error naming Options.DisableConditionalWrites, which switches to a HEAD
//     then a PUT: not a fence, safe only with one writer per table.
//   - Create streams: one PutObject below Options.PartSize, else a multipart upload whose
//     parts go up in the background (Options.UploadConcurrency at once) and which becomes
//     visible only when Close completes it, conditionally as above; an error or a cancelled
//     context aborts it. WriteAtomic is one PutObject. Open is one HEAD, then one ranged GET
//     per ReadAt (or Read).
//   - Errors name s3://bucket/key; a missing object matches fs.ErrNotExist, a missing bucket
//     does not. Version is the ETag and the size (one HEAD). SyncDir does nothing: a
//     completed PUT or DELETE is durable.
//   - Every request runs under the caller's context, with the SDK's standard retryer
//     (Options.MaxAttempts, MaxBackoff: throttling, 5xx, connection errors) and a stall
//     timeout per attempt (Options.RequestTimeout, deadline.go): an attempt that waits that
//     long on the server, to send, for the response or within a read of the body, fails with
//     *StallError and is retried; a transfer that keeps moving is not cut.
//   - Empty Options fields fall back to the environment ($AWS_ENDPOINT_URL_S3,
//     $AWS_ENDPOINT_URL, $AWS_REGION, $AWS_ACCESS_KEY_ID/$AWS_SECRET_ACCESS_KEY, ...), then to
//     the SDK's default chain; path-style addressing is the default when an endpoint is set.
//
// ParseURL splits a warehouse URL (s3://bucket/prefix) into the bucket and the prefix; the
// warehouse is then the FileIO path "/prefix".
package s3
