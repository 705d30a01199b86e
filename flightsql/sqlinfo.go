package flightsql

import "github.com/apache/arrow-go/v18/arrow/flight/flightsql"

// sqlInfo is what flightd reports about itself: every SqlInfo key the Arrow
// Flight SQL JDBC driver's DatabaseMetaData reads (it unboxes a missing
// value and throws NullPointerException) and those ADBC reads. Transactions
// are not advertised: ADBC Python would otherwise wrap every default
// connection in explicit transactions. Limits are 0, JDBC's "no limit or
// unknown", except the statement length flightd enforces. Bitmasks set bit
// n for the enum value n of FlightSql.proto.
func (s *Server) sqlInfo() map[flightsql.SqlInfo]any {
	return map[flightsql.SqlInfo]any{
		flightsql.SqlInfoFlightSqlServerName:                        s.opts.Name,
		flightsql.SqlInfoFlightSqlServerVersion:                     s.opts.Version,
		flightsql.SqlInfoFlightSqlServerArrowVersion:                "18.8.0",
		flightsql.SqlInfoFlightSqlServerReadOnly:                    false,
		flightsql.SqlInfoFlightSqlServerSql:                         true,
		flightsql.SqlInfoFlightSqlServerSubstrait:                   false,
		flightsql.SqlInfoFlightSqlServerTransaction:                 int32(0), // none
		flightsql.SqlInfoFlightSqlServerCancel:                      false,
		flightsql.SqlInfoFlightSqlServerBulkIngestion:               true,
		flightsql.SqlInfoFlightSqlServerIngestTransactionsSupported: false,
		flightsql.SqlInfoFlightSqlServerStatementTimeout:            int32(0),
		flightsql.SqlInfoFlightSqlServerTransactionTimeout:          int32(0),

		flightsql.SqlInfoDDLCatalog:                             false,
		flightsql.SqlInfoDDLSchema:                              true,
		flightsql.SqlInfoDDLTable:                               true,
		flightsql.SqlInfoIdentifierCase:                         int32(1), // case-insensitive, as DuckDB
		flightsql.SqlInfoIdentifierQuoteChar:                    `"`,
		flightsql.SqlInfoQuotedIdentifierCase:                   int32(1), // quoted names too
		flightsql.SqlInfoAllTablesAreASelectable:                true,
		flightsql.SqlInfoNullOrdering:                           int32(3), // at the end (DuckDB's NULLS LAST)
		flightsql.SqlInfoKeywords:                               duckdbKeywords,
		flightsql.SqlInfoNumericFunctions:                       numericFunctions,
		flightsql.SqlInfoStringFunctions:                        stringFunctions,
		flightsql.SqlInfoSystemFunctions:                        []string{"COALESCE", "IFNULL", "NULLIF", "TYPEOF", "VERSION"},
		flightsql.SqlInfoDateTimeFunctions:                      dateTimeFunctions,
		flightsql.SqlInfoSearchStringEscape:                     `\`,
		flightsql.SqlInfoExtraNameChars:                         "",
		flightsql.SqlInfoSupportsColumnAliasing:                 true,
		flightsql.SqlInfoNullPlusNullIsNull:                     true,
		flightsql.SqlInfoSupportsConvert:                        map[int32][]int32{},
		flightsql.SqlInfoSupportsTableCorrelationNames:          true,
		flightsql.SqlInfoSupportsDifferentTableCorrelationNames: false,
		flightsql.SqlInfoSupportsExpressionsInOrderBy:           true,
		flightsql.SqlInfoSupportsOrderByUnrelated:               true,
		flightsql.SqlInfoSupportedGroupBy:                       int32(1<<0 | 1<<1), // unrelated, beyond select
		flightsql.SqlInfoSupportsLikeEscapeClause:               true,
		flightsql.SqlInfoSupportsNonNullableColumns:             true,
		flightsql.SqlInfoSupportedGrammar:                       int32(1<<0 | 1<<1), // minimum, core
		flightsql.SqlInfoANSI92SupportedLevel:                   int32(1<<0 | 1<<1), // entry, intermediate
		flightsql.SqlInfoSupportsIntegrityEnhancementFacility:   false,
		flightsql.SqlInfoOuterJoinsSupportLevel:                 int32(2), // full
		flightsql.SqlInfoSchemaTerm:                             "database",
		flightsql.SqlInfoProcedureTerm:                          "procedure",
		flightsql.SqlInfoCatalogTerm:                            "catalog",
		flightsql.SqlInfoCatalogAtStart:                         false,
		flightsql.SqlInfoSchemasSupportedActions:                int32(0),
		flightsql.SqlInfoCatalogsSupportedActions:               int32(0),
		flightsql.SqlInfoSupportedPositionedCommands:            int32(0),
		flightsql.SqlInfoSelectForUpdateSupported:               false,
		flightsql.SqlInfoStoredProceduresSupported:              false,
		flightsql.SqlInfoSupportedSubqueries:                    int32(1<<0 | 1<<1 | 1<<2 | 1<<3), // comparisons, EXISTS, IN, quantified
		flightsql.SqlInfoCorrelatedSubqueriesSupported:          true,
		flightsql.SqlInfoSupportedUnions:                        int32(1<<0 | 1<<1), // UNION, UNION ALL

		flightsql.SqlInfoMaxBinaryLiteralLen:     int64(0),
		flightsql.SqlInfoMaxCharLiteralLen:       int64(0),
		flightsql.SqlInfoMaxColumnNameLen:        int64(0),
		flightsql.SqlInfoMaxColumnsInGroupBy:     int64(0),
		flightsql.SqlInfoMaxColumnsInIndex:       int64(0),
		flightsql.SqlInfoMaxColumnsInOrderBy:     int64(0),
		flightsql.SqlInfoMaxColumnsInSelect:      int64(0),
		flightsql.SqlInfoMaxColumnsInTable:       int64(0),
		flightsql.SqlInfoMaxConnections:          int64(0),
		flightsql.SqlInfoMaxCursorNameLen:        int64(0),
		flightsql.SqlInfoMaxIndexLen:             int64(0),
		flightsql.SqlInfoDBSchemaNameLen:         int64(0),
		flightsql.SqlInfoMaxProcedureNameLen:     int64(0),
		flightsql.SqlInfoMaxCatalogNameLen:       int64(0),
		flightsql.SqlInfoMaxRowSize:              int64(0),
		flightsql.SqlInfoMaxRowSizeIncludesBlobs: false,
		flightsql.SqlInfoMaxStatementLen:         int64(s.opts.MaxStatementBytes),
		flightsql.SqlInfoMaxStatements:           int64(0),
		flightsql.SqlInfoMaxTableNameLen:         int64(0),
		flightsql.SqlInfoMaxTablesInSelect:       int64(0),
		flightsql.SqlInfoMaxUsernameLen:          int64(0),

		flightsql.SqlInfoDefaultTransactionIsolation:                         int64(0), // none
		flightsql.SqlInfoTransactionsSupported:                               false,
		flightsql.SqlInfoSupportedTransactionsIsolationlevels:                int32(1 << 0), // none
		flightsql.SqlInfoDataDefinitionCausesTransactionCommit:               false,
		flightsql.SqlInfoDataDefinitionsInTransactionsIgnored:                false,
		flightsql.SqlInfoSupportedResultSetTypes:                             int32(1 << 1), // forward only
		flightsql.SqlInfoSupportedConcurrenciesForResultSetUnspecified:       int32(1 << 1), // read only
		flightsql.SqlInfoSupportedConcurrenciesForResultSetForwardOnly:       int32(1 << 1),
		flightsql.SqlInfoSupportedConcurrenciesForResultSetScrollSensitive:   int32(0),
		flightsql.SqlInfoSupportedConcurrenciesForResultSetScrollInsensitive: int32(0),
		flightsql.SqlInfoBatchUpdatesSupported:                               true, // executeBatch of a prepared INSERT
		flightsql.SqlInfoSavePointsSupported:                                 false,
		flightsql.SqlInfoNamedParametersSupported:                            false,
		flightsql.SqlInfoLocatorsUpdateCopy:                                  false,
		flightsql.SqlInfoStoredFunctionsUsingCallSyntaxSupported:             false,
	}
}

// registerSqlInfo registers sqlInfo with the framework, which answers
// GetSqlInfo from it.
func (s *Server) registerSqlInfo() error {
	for k, v := range s.sqlInfo() {
		if err := s.RegisterSqlInfo(k, v); err != nil {
			return err
		}
	}
	return nil
}

// duckdbKeywords are DuckDB's reserved words beyond SQL:2003 (JDBC's
// getSQLKeywords lists only those).
var duckdbKeywords = []string{"ANTI", "ASOF", "COLUMNS", "DESCRIBE", "EXCLUDE", "GLOB", "ILIKE", "PIVOT", "POSITIONAL", "QUALIFY", "SEMI", "SHOW", "SUMMARIZE", "UNPIVOT"}

var numericFunctions = []string{"ABS", "ACOS", "ASIN", "ATAN", "ATAN2", "CEIL", "COS", "COT", "DEGREES", "EXP", "FLOOR", "LN", "LOG", "LOG10", "LOG2", "MOD", "PI", "POWER", "RADIANS", "RANDOM", "ROUND", "SIGN", "SIN", "SQRT", "TAN", "TRUNC"}

var stringFunctions = []string{"ASCII", "CHR", "CONCAT", "CONCAT_WS", "CONTAINS", "LEFT", "LENGTH", "LOWER", "LPAD", "LTRIM", "POSITION", "REGEXP_MATCHES", "REGEXP_REPLACE", "REPEAT", "REPLACE", "REVERSE", "RIGHT", "RPAD", "RTRIM", "SPLIT_PART", "STARTS_WITH", "STRPOS", "SUBSTRING", "TRIM", "UPPER"}

var dateTimeFunctions = []string{"AGE", "CURRENT_DATE", "CURRENT_TIME", "CURRENT_TIMESTAMP", "DATE_ADD", "DATE_DIFF", "DATE_PART", "DATE_SUB", "DATE_TRUNC", "DAYNAME", "EPOCH", "EPOCH_MS", "EXTRACT", "LAST_DAY", "MAKE_DATE", "MAKE_TIMESTAMP", "MONTHNAME", "NOW", "STRFTIME", "STRPTIME", "TO_TIMESTAMP"}
