// Package manifest is Apache Paimon's on-disk byte formats below the table:
// the Avro object container files of manifests, manifest lists and index
// manifests, the manifest model (Entry, DataFileMeta, FileMeta,
// SimpleStats), Java's BinaryRow, and deletion vectors. It does no I/O and
// knows no table; package lake reads and writes tables with it.
//
// What the package promises:
//
//   - Byte-exact with Java Paimon. Encode and EncodeList write Avro object
//     container files with the zstandard codec, records of _VERSION 2
//     (FormatVersion), and the schemas Java's AvroSchemaConverter derives:
//     top record "record" in namespace org.apache.paimon.avro.generated,
//     every nested record inlined under Java's name (record__FILE,
//     record__FILE__KEY_STATS, ...). EncodeAvro writes any records so;
//     the decoders read the zstandard, null, deflate and snappy codecs and
//     older record versions without _VERSION.
//   - EncodeBinaryRow, DecodeBinaryRow, SerializeBinaryRow and HashBinaryRow
//     are Java's BinaryRow layout (null bit set with the RowKind byte, 8-byte
//     fixed slots, variable part; strings of up to 7 bytes inline, DECIMAL
//     p > 18 and TIMESTAMP p > 3 in the variable part), SerializationUtils'
//     int32 arity prefix, and BinaryRow.hashCode (Murmur3, seed 42);
//     BucketOf is DefaultBucketFunction.
//   - Index manifests and deletion vectors are read as Java writes them:
//     32-bit BitmapDeletionVector and 64-bit Bitmap64DeletionVector with
//     their checksums, range lengths and cardinalities checked.
//   - Decoders refuse corrupt input: Decode, DecodeList, DecodeIndexManifest,
//     IndexFileNames, ParseDeletionVector, DecodeBinaryRow and
//     DeserializeBinaryRow return an error matching ErrCorrupt for bytes
//     that are truncated, inconsistent or of an unknown version. The Avro and
//     deletion-vector decoders are fuzzed (FuzzManifest, FuzzManifestList,
//     FuzzIndexManifest, FuzzDeletionVector). Allocation is bounded by the input: every length
//     inside an Avro file is bounded by the file and block that hold it (a
//     decompressed block by 1 GiB), yet values over hamba's 1 MiB limit,
//     which Java writes legally, decode (avro_ocf.go).
//   - Decoded manifests round-trip: what Decode and DecodeList return
//     encodes to files that decode to the same values.
package manifest
