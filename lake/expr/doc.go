// Package expr evaluates the predicates of a WHERE clause that flightd
// understands, "column op constant" with = < <= > >= and IN joined by AND,
// for everything that prunes or filters by them: the lake's partitions,
// buckets, file and row-group statistics and the primary keys of a
// primary-key scan (package lake), the log rows a point query merges
// (package lakestream), and the rows a plain scan hands to a client
// without DuckDB (package query). It depends on Arrow only, not on the
// lake's types: a column is known by its Kind.
//
// What it promises:
//
//   - SQL's semantics, as DuckDB evaluates the same WHERE on the same
//     data (query's TestExprAgreesWithDuckDB checks it): a NULL never
//     matches a predicate; integers and dates (days since 1970-01-01) are
//     compared as int64, strings as unsigned bytes (DuckDB's default
//     binary collation; for UTF-8, code point order).
//   - A constant is converted once, by Bind, as SQL converts a literal to
//     the column's type: an int64 (integer literal) compares with integer
//     columns as it is, whatever their width; a string (string literal)
//     is cast to the column's type: for integer columns a base-10 integer
//     with optional sign and ASCII white space around it, in the range of
//     the column's type; for DATE columns 'YYYY-MM-DD'. A constant Bind
//     cannot convert exactly as DuckDB would (DuckDB also reads '1.4',
//     '0x1' and '2024-1-5'), or that DuckDB refuses ('300' for a TINYINT,
//     an integer for a DATE), is refused: the predicate is not used, and
//     the caller leaves the decision to DuckDB. An arrow.Date32 is a date
//     for DATE columns (for callers holding dates, not from SQL).
//   - One evaluator answers every question, so that they agree: the row
//     matcher (Conj.Matcher, typed over Arrow arrays, without boxing
//     values), the single-value test (Conj.MayMatchValue) and the range
//     test (Conj.MayMatchRange) give the same answer for a value v and
//     the range [v, v]; the range test over [lo, hi] is false only when
//     no value in it can match (pruning by statistics only skips what
//     cannot match). A value or range of a type the conjunction does not
//     compare is never pruned.
//   - NewReader hands out exactly the rows of its input that match a
//     Filter (BindSchema), in order, batches without a match left out.
package expr
