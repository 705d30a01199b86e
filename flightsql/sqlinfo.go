package flightsql

import "github.com/apache/arrow-go/v18/arrow/flight/flightsql"

// registerSqlInfo registers what flightd reports about itself. Transactions
// are not advertised: ADBC Python would otherwise wrap every default
// connection in explicit transactions.
func (s *Server) registerSqlInfo() error {
	info := map[flightsql.SqlInfo]any{
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
		flightsql.SqlInfoIdentifierQuoteChar:                        `"`,
		flightsql.SqlInfoSearchStringEscape:                         `\`,
		flightsql.SqlInfoSchemaTerm:                                 "database",
		flightsql.SqlInfoCatalogTerm:                                "catalog",
		flightsql.SqlInfoProcedureTerm:                              "procedure",
		flightsql.SqlInfoDDLCatalog:                                 false,
		flightsql.SqlInfoDDLSchema:                                  true,
		flightsql.SqlInfoDDLTable:                                   true,
		flightsql.SqlInfoTransactionsSupported:                      false,
	}
	for k, v := range info {
		if err := s.RegisterSqlInfo(k, v); err != nil {
			return err
		}
	}
	return nil
}
