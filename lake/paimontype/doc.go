// Package paimontype is Apache Paimon's type and schema model: data types,
// the type grammar, and the schema file (schema/schema-N) as Java Paimon
// writes and reads it. It does no I/O; package lake reads and writes tables
// with it.
//
// What the package promises:
//
//   - TableSchema.MarshalJSON writes a schema file byte for byte as Java's
//     SchemaSerializer with Jackson's default pretty printer does: version 3,
//     keys in Java's order ("version", "id", "fields", "highestFieldId",
//     "partitionKeys", "primaryKeys", "options", "comment" when set,
//     "timeMillis"), objects one key per line indented two spaces per level,
//     " : " between key and value, arrays inline ("[ a, b ]"), empty
//     containers as "{ }" and "[ ]", strings escaped as Jackson does (control
//     characters, quote and backslash only). Options are written in sorted
//     key order. JacksonPretty and JSONObject give other files (snapshots)
//     the same layout.
//   - TableSchema.UnmarshalJSON reads any schema version, with Java's
//     defaults for old ones (bucket 1 before version 2, file.format orc
//     before version 3). A type is read in either JSON form: a string for an
//     atomic type, an object ("type", then "element", "key"/"value" or
//     "fields") for ARRAY, MULTISET, MAP and ROW. A field without a type,
//     or a value of the wrong JSON kind, is an error.
//   - ParseType reads a type as Paimon spells it (DataType.String, Java's
//     asSQLString plus " NOT NULL") and the SQL spellings Paimon accepts:
//     BOOLEAN/BOOL, TINYINT, SMALLINT, INT/INTEGER, BIGINT, FLOAT/REAL,
//     DOUBLE [PRECISION], DECIMAL/DEC/NUMERIC[(p[, s])] (1 <= p <= 38,
//     0 <= s <= p), CHAR/CHARACTER[(n)], VARCHAR/CHARACTER VARYING[(n)],
//     STRING/TEXT, BINARY[(n)], VARBINARY[(n)], BYTES, DATE,
//     TIME[(p)] [WITHOUT TIME ZONE], TIMESTAMP[(p)] [WITH LOCAL | WITHOUT
//     TIME ZONE], TIMESTAMP_LTZ[(p)] (0 <= p <= 9), ARRAY<t>, MULTISET<t>,
//     MAP<k, v> and ROW<name [:] t ['comment'], ...> or ROW(...), each
//     followed by an optional NULL or NOT NULL. Keywords are case
//     insensitive; field names may be quoted with backquotes. The spelling
//     of a parsed type parses back to the same type, and so does its JSON
//     (FuzzParseType).
//   - Limits: composite types nest at most MaxTypeDepth (32) levels,
//     ARRAY<INT> being one; a deeper type, as text or in a schema file, is
//     refused with an error matching ErrTypeTooDeep before it is built
//     (the cost of refusing does not grow with the depth). Type text must
//     be valid UTF-8, a ROW spelled as text has at least one field, and errors quote the
//     offending text clipped to 80 bytes.
//   - DataType.ArrowType is the Arrow type of a Paimon type's values (see
//     package lake for the Parquet layout); ArrowSchema carries each field's
//     Paimon id as "PARQUET:field_id".
//   - NewTableSchema normalises a declared Schema into schema-0 as Java's
//     Schema does: "primary-key" and "partition" options become keys, names
//     are unique and not reserved, keys name columns, primary-key columns
//     become NOT NULL (unless primary-key.nullable), and fields, nested ROW
//     fields included, get ids depth first.
package paimontype
