import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.Date;
import java.sql.DriverManager;
import java.sql.ParameterMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;

/**
 * Drives flightd through the Arrow Flight SQL JDBC driver the way a JDBC tool does: plain
 * statements, prepared statements with parameters (set one by one and in batches), metadata, and
 * errors. It checks every answer itself, prints one line per check and exits 1 on the first
 * mismatch.
 *
 * <p>Usage: java -cp jdbc-check.jar:lib/* JdbcCheck host:port database [url-parameters]; the
 * URL parameters default to useEncryption=false (plain gRPC, no credentials).
 */
public final class JdbcCheck {
  private static int checks;

  public static void main(String[] args) throws Exception {
    String params = args.length > 2 ? args[2] : "useEncryption=false";
    String url = "jdbc:arrow-flight-sql://" + args[0] + "?" + params;
    String db = args[1];
    try (Connection c = DriverManager.getConnection(url)) {
      run(c, db);
      navigator(c, db);
      everyType(c, db);
      session(c, url, db);
      streaming(url, db);
    } catch (AssertionError e) {
      System.out.println("FAIL " + e.getMessage());
      System.exit(1);
    }
    System.out.println("ok " + checks + " checks");
  }

  private static void run(Connection c, String db) throws SQLException {
    String t = db + ".orders";
    String rt = db + ".\"orders$rt\"";
    try (Statement s = c.createStatement()) {
      s.execute("CREATE DATABASE " + db);
      s.execute("CREATE TABLE " + t + " (id BIGINT, customer STRING, amount DECIMAL(10,2),"
          + " ts TIMESTAMP(6), day DATE, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')");
    }

    // One row at a time: each setter as a JDBC tool would call it.
    try (PreparedStatement p = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?, ?, ?, ?)")) {
      ParameterMetaData md = p.getParameterMetaData();
      check("insert parameter count", 5, md.getParameterCount());
      check("insert parameter 1 type", Types.BIGINT, md.getParameterType(1));
      check("insert parameter 2 type", Types.VARCHAR, md.getParameterType(2));
      check("insert parameter 3 type", Types.DECIMAL, md.getParameterType(3));
      p.setLong(1, 1);
      p.setString(2, "O'Brien");
      p.setBigDecimal(3, new BigDecimal("12.50"));
      p.setTimestamp(4, Timestamp.valueOf("2024-01-02 03:04:05.678"));
      p.setDate(5, Date.valueOf("2024-02-29"));
      check("executeUpdate", 1, p.executeUpdate());
      p.setInt(1, 2);
      p.setString(2, "?");
      p.setNull(3, Types.DECIMAL);
      p.setNull(4, Types.TIMESTAMP);
      p.setNull(5, Types.DATE);
      check("executeUpdate with nulls", 1, p.executeUpdate());
    }

    // A batch: many rows, one statement execution.
    try (PreparedStatement p = c.prepareStatement("INSERT INTO " + t + " (id, customer, amount) VALUES (?, ?, ?)")) {
      for (int i = 10; i < 110; i++) {
        p.setLong(1, i);
        p.setString(2, "c" + i);
        p.setBigDecimal(3, new BigDecimal(i + ".25"));
        p.addBatch();
      }
      int[] n = p.executeBatch();
      long sum = 0;
      for (int k : n) {
        sum += k;
      }
      check("executeBatch rows", 100L, sum);
    }

    // Prepared queries with parameters, run repeatedly with other values.
    try (PreparedStatement p = c.prepareStatement(
        "SELECT id, customer, amount, ts, day FROM " + rt + " WHERE id = ?")) {
      ParameterMetaData md = p.getParameterMetaData();
      check("query parameter count", 1, md.getParameterCount());
      check("query parameter type", Types.BIGINT, md.getParameterType(1));
      p.setLong(1, 1);
      List<String> rows = rows(p.executeQuery());
      check("row 1", List.of("1|O'Brien|12.50|2024-01-02 03:04:05.678|2024-02-29"), rows);
      p.setLong(1, 2);
      check("row 2", List.of("2|?|null|null|null"), rows(p.executeQuery()));
      p.setLong(1, 3);
      check("no row 3", List.of(), rows(p.executeQuery()));
    }
    try (PreparedStatement p = c.prepareStatement(
        "SELECT count(*), sum(amount) FROM " + rt + " WHERE customer LIKE ? AND id BETWEEN ? AND ?")) {
      p.setString(1, "c%");
      p.setInt(2, 10);
      p.setInt(3, 19);
      check("aggregate", List.of("10|147.50"), rows(p.executeQuery()));
    }
    try (PreparedStatement p = c.prepareStatement("SELECT id FROM " + rt + " WHERE ts = ? AND day = ?")) {
      p.setTimestamp(1, Timestamp.valueOf("2024-01-02 03:04:05.678"));
      p.setDate(2, Date.valueOf("2024-02-29"));
      check("timestamp and date parameters", List.of("1"), rows(p.executeQuery()));
    }

    // Plain statements and metadata.
    try (Statement s = c.createStatement()) {
      check("count", List.of("102"), rows(s.executeQuery("SELECT count(*) FROM " + rt)));
      try {
        s.executeQuery("SELEC 1");
        throw new AssertionError("bad SQL: no error");
      } catch (SQLException e) {
        check("bad SQL error names the problem", true, e.getMessage().contains("syntax error"));
      }
      check("server keeps serving", List.of("1"), rows(s.executeQuery("SELECT 1")));
    }
    // A parameter's type is what the statement makes of it; a string where it fixes none.
    try (PreparedStatement p = c.prepareStatement("SELECT CAST(? AS INTEGER) + 1 AS n, ? AS s")) {
      ParameterMetaData pm = p.getParameterMetaData();
      check("cast parameter type", Types.BIGINT, pm.getParameterType(1));
      check("untyped parameter type", Types.VARCHAR, pm.getParameterType(2));
      p.setInt(1, 41);
      p.setString(2, "x");
      check("cast and untyped parameters", List.of("42|x"), rows(p.executeQuery()));
    }
    DatabaseMetaData md = c.getMetaData();
    List<String> tables = new ArrayList<>();
    try (ResultSet rs = md.getTables(null, db, "%", null)) {
      while (rs.next()) {
        tables.add(rs.getString("TABLE_NAME") + ":" + rs.getString("TABLE_TYPE"));
      }
    }
    check("tables", List.of("orders:TABLE", "orders$rt:VIEW", "orders$changelog:VIEW"), tables);

    // Columns as declared, and results with their SQL types.
    List<String> cols = new ArrayList<>();
    try (ResultSet rs = md.getColumns(null, db, "orders", "%")) {
      while (rs.next()) {
        cols.add(rs.getString("COLUMN_NAME") + " " + rs.getString("TYPE_NAME") + " "
            + rs.getInt("COLUMN_SIZE") + "," + rs.getInt("DECIMAL_DIGITS"));
      }
    }
    check("declared columns", List.of("id BIGINT 19,0", "customer STRING 2147483647,0",
        "amount DECIMAL(10, 2) 10,2", "ts TIMESTAMP(6) 6,6", "day DATE 10,0"), cols);
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT amount, amount * 2 AS twice, id FROM " + rt)) {
      java.sql.ResultSetMetaData rm = rs.getMetaData();
      check("result decimal precision and scale", "DECIMAL 10,2",
          rm.getColumnTypeName(1) + " " + rm.getPrecision(1) + "," + rm.getScale(1));
      check("precision and scale of an expression", "DECIMAL 18,2",
          rm.getColumnTypeName(2) + " " + rm.getPrecision(2) + "," + rm.getScale(2));
      check("result bigint type", "BIGINT", rm.getColumnTypeName(3));
    }

    // DBeaver's navigator: a table's keys tell its rows apart in the data
    // editor; Paimon has no foreign keys, so those lists are empty.
    check("primary key", List.of("id|1"), keys(md.getPrimaryKeys(null, db, "orders")));
    check("primary key of t$rt", List.of("id|1"), keys(md.getPrimaryKeys(null, db, "orders$rt")));
    check("no primary key of a missing table", List.of(), keys(md.getPrimaryKeys(null, db, "missing")));
    // The driver answers getTypeInfo itself (Avatica's empty list); it
    // never asks the server (GetXdbcTypeInfo serves ADBC and ODBC).
    rows(md.getTypeInfo());
    check("imported keys", List.of(), rows(md.getImportedKeys(null, db, "orders")));
    check("exported keys", List.of(), rows(md.getExportedKeys(null, db, "orders")));
    check("cross reference", List.of(), rows(md.getCrossReference(null, db, "orders", null, db, "orders")));
    // Every DatabaseMetaData property the driver implements answers: the
    // driver unboxes a SqlInfo value the server did not send and throws
    // NullPointerException (getDefaultTransactionIsolation,
    // getMaxColumnNameLength, supportsBatchUpdates, ...).
    int props = 0;
    for (Method m : DatabaseMetaData.class.getMethods()) {
      Class<?> r = m.getReturnType();
      if (m.getParameterCount() != 0
          || (r != boolean.class && r != int.class && r != long.class && r != String.class)) {
        continue;
      }
      try {
        m.invoke(md);
        props++;
      } catch (InvocationTargetException e) {
        if (e.getCause() instanceof SQLFeatureNotSupportedException) {
          continue; // the driver does not implement it
        }
        throw new AssertionError("DatabaseMetaData." + m.getName() + "(): " + e.getCause());
      } catch (IllegalAccessException e) {
        throw new AssertionError("DatabaseMetaData." + m.getName() + "(): " + e);
      }
    }
    check("DatabaseMetaData properties answered (more than 100)", true, props > 100);
    for (int type : new int[] {ResultSet.TYPE_FORWARD_ONLY, ResultSet.TYPE_SCROLL_INSENSITIVE,
        ResultSet.TYPE_SCROLL_SENSITIVE}) {
      md.supportsResultSetType(type);
      md.supportsResultSetConcurrency(type, ResultSet.CONCUR_READ_ONLY);
    }
    check("forward-only results", true, md.supportsResultSetType(ResultSet.TYPE_FORWARD_ONLY));
    check("no transactions", Connection.TRANSACTION_NONE, md.getDefaultTransactionIsolation());
    check("batch updates", true, md.supportsBatchUpdates());
    check("max statement length", true, md.getMaxStatementLength() > 0);
  }

  /** The calls DBeaver's navigator makes as a user opens a connection's tree. */
  private static void navigator(Connection c, String db) throws SQLException {
    DatabaseMetaData md = c.getMetaData();
    check("no catalogs", List.of(), rows(md.getCatalogs()));
    List<String> schemas = new ArrayList<>();
    try (ResultSet rs = md.getSchemas()) {
      while (rs.next()) {
        schemas.add(rs.getString("TABLE_SCHEM"));
      }
    }
    check("schemas hold the database", true, schemas.contains(db) && schemas.contains("default"));
    List<String> matching = new ArrayList<>();
    try (ResultSet rs = md.getSchemas(null, db.substring(0, 2) + "%")) {
      while (rs.next()) {
        matching.add(rs.getString("TABLE_SCHEM"));
      }
    }
    check("schema pattern", true, matching.contains(db) && !matching.contains("default"));
    List<String> views = new ArrayList<>();
    try (ResultSet rs = md.getTables(null, db, "ord%", new String[] {"VIEW"})) {
      while (rs.next()) {
        views.add(rs.getString("TABLE_NAME"));
      }
    }
    check("views by pattern and type", List.of("orders$changelog", "orders$rt"), sorted(views));
    // Paimon tables have no indexes beyond the key; the list is empty, not an error.
    rows(md.getIndexInfo(null, db, "orders", false, true));
    check("index info answers", true, true);
    rows(md.getTableTypes());
    rows(md.getColumns(null, db, "%", "%"));
    check("columns of every table", true, true);
  }

  /** Every column type: declared types in getColumns, and values and metadata of a query. */
  private static void everyType(Connection c, String db) throws SQLException {
    String[][] cols = {
      {"b", "BOOLEAN"}, {"ti", "TINYINT"}, {"si", "SMALLINT"}, {"i", "INT"}, {"bi", "BIGINT"},
      {"f", "FLOAT"}, {"d", "DOUBLE"}, {"dec", "DECIMAL(38, 10)"}, {"s", "STRING"},
      {"ch", "CHAR(3)"}, {"vc", "VARCHAR(100)"}, {"by", "BYTES"}, {"bn", "BINARY(4)"},
      {"dt", "DATE"}, {"tm", "TIME(3)"}, {"ts", "TIMESTAMP(3)"}, {"tl", "TIMESTAMP_LTZ(6)"},
      {"arr", "ARRAY<INT>"}, {"m", "MAP<STRING, INT>"}, {"r", "ROW<a INT, b STRING>"},
    };
    StringBuilder ddl = new StringBuilder("CREATE TABLE " + db + ".types (");
    for (int i = 0; i < cols.length; i++) {
      ddl.append(i > 0 ? ", " : "").append(cols[i][0]).append(' ').append(cols[i][1]);
    }
    try (Statement s = c.createStatement()) {
      s.execute(ddl.append(")").toString());
      s.execute("INSERT INTO " + db + ".types VALUES (true, 1, 2, 3, 4, 1.5, 2.5,"
          + " 12345.0123456789, 's', 'abc', 'vc', X'0102', X'01020304', DATE '2024-02-29',"
          + " TIME '01:02:03.456', TIMESTAMP '2024-01-02 03:04:05.678',"
          + " TIMESTAMP '2024-01-02 03:04:05.678901', [1, 2], MAP {'k': 1}, {'a': 1, 'b': 'x'})");
      s.execute("INSERT INTO " + db + ".types (i) VALUES (7)");
    }
    List<String> declared = new ArrayList<>();
    try (ResultSet rs = c.getMetaData().getColumns(null, db, "types", "%")) {
      while (rs.next()) {
        declared.add(rs.getString("TYPE_NAME"));
      }
    }
    // As Paimon spells them in the schema file.
    List<String> want = new ArrayList<>();
    for (String[] col : cols) {
      want.add(col[1]);
    }
    want.set(16, "TIMESTAMP(6) WITH LOCAL TIME ZONE");
    want.set(19, "ROW<`a` INT, `b` STRING>");
    check("declared types", want, declared);
    int values = 0;
    try (Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT * FROM " + db + ".\"types$rt\" ORDER BY i")) {
      java.sql.ResultSetMetaData rm = rs.getMetaData();
      check("result columns", cols.length, rm.getColumnCount());
      for (int i = 1; i <= cols.length; i++) {
        rm.getColumnTypeName(i);
        rm.getPrecision(i);
        rm.getScale(i);
        rm.getColumnClassName(i);
        rm.isNullable(i);
      }
      // A query's columns have the types of DuckDB's result: the length of
      // VARCHAR(100) is in getColumns, not here.
      check("result type of VARCHAR(100)", "VARCHAR", rm.getColumnTypeName(11));
      check("result precision of DECIMAL(38, 10)", "38,10", rm.getPrecision(8) + "," + rm.getScale(8));
      while (rs.next()) {
        for (int i = 1; i <= cols.length; i++) {
          try {
            if (cols[i - 1][0].equals("tl")) {
              // The 18.x driver types timestamps with a time zone
              // TIMESTAMP_WITH_TIMEZONE, whose getObject Avatica does not
              // implement ("not implemented"); getTimestamp reads them.
              rs.getTimestamp(i);
            } else {
              rs.getObject(i);
            }
            rs.getString(i);
          } catch (RuntimeException | SQLException e) {
            throw new AssertionError("value of " + cols[i - 1][0] + " " + cols[i - 1][1] + ": " + e);
          }
          values++;
        }
      }
    }
    check("every value read as an object and a string", 2 * cols.length, values);
  }

  private static List<String> sorted(List<String> l) {
    List<String> out = new ArrayList<>(l);
    out.sort(null);
    return out;
  }

  /**
   * The session: USE moves where the connection's unqualified names resolve (the driver keeps
   * the server's session cookie), and the catalog URL property, which the driver sends as a
   * session option, is refused: flightd has no catalogs.
   */
  private static void session(Connection c, String url, String db) throws SQLException {
    try (Statement s = c.createStatement()) {
      s.execute("USE " + db);
      check("unqualified name after USE", List.of("102"),
          rows(s.executeQuery("SELECT count(*) FROM \"orders$rt\"")));
      try (PreparedStatement p = c.prepareStatement("SELECT count(*) FROM orders WHERE id > ?")) {
        s.execute("USE default");
        p.setLong(1, 0);
        p.executeQuery().close(); // prepared in db: it keeps resolving there
      }
      try {
        s.executeQuery("SELECT count(*) FROM \"orders$rt\"");
        throw new AssertionError("orders$rt resolved in default after USE default");
      } catch (SQLException e) {
        check("USE default moved the session", true, e.getMessage().contains("orders$rt"));
      }
    }
    try (Connection other = DriverManager.getConnection(url + "&catalog=spark_catalog")) {
      throw new AssertionError("a connection with catalog=spark_catalog opened");
    } catch (SQLException | RuntimeException e) {
      check("catalog property refused", true, String.valueOf(e.getMessage()).contains("catalog"));
    }
  }

  /**
   * A streaming read through the driver: SET streaming = true turns the connection's session to
   * streaming; a query of orders$rt then hands out the current rows, and a row another connection
   * inserts afterwards arrives on the same result set while it stays open. A watchdog cancels the
   * statement if the driver waits for the (endless) stream to end before handing out rows.
   */
  private static void streaming(String url, String db) throws SQLException {
    try (Connection sc = DriverManager.getConnection(url);
        Connection wc = DriverManager.getConnection(url);
        Statement st = sc.createStatement();
        Statement ws = wc.createStatement()) {
      st.execute("SET streaming = true");
      java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
      Thread watchdog = new Thread(() -> {
        try {
          Thread.sleep(60_000);
          if (!done.get()) {
            st.cancel();
          }
        } catch (InterruptedException | SQLException e) {
          // ended or cancelled: nothing to do
        }
      });
      watchdog.setDaemon(true);
      watchdog.start();
      ResultSet rs = st.executeQuery("SELECT id FROM " + db + ".\"orders$rt\"");
      check("streamed result's first column", "_change_type", rs.getMetaData().getColumnName(1));
      int current = 0;
      while (current < 102) {
        if (!rs.next()) {
          throw new AssertionError("the stream ended after " + current + " current rows");
        }
        current++;
      }
      check("streamed current rows", 102, current);
      ws.executeUpdate("INSERT INTO " + db + ".orders (id, customer) VALUES (9000, 'streamed')");
      if (!rs.next()) {
        throw new AssertionError("the stream ended before the inserted row arrived");
      }
      check("streamed change", "+I|9000", rs.getString(1) + "|" + rs.getLong("id"));
      done.set(true);
      watchdog.interrupt();
      st.cancel();
      try {
        rs.close();
      } catch (SQLException e) {
        // closing a cancelled stream may report the cancellation
      }
    }
  }

  /** column|key sequence of a getPrimaryKeys result. */
  private static List<String> keys(ResultSet rs) throws SQLException {
    List<String> out = new ArrayList<>();
    try (rs) {
      while (rs.next()) {
        out.add(rs.getString("COLUMN_NAME") + "|" + rs.getInt("KEY_SEQ"));
      }
    }
    return out;
  }

  private static List<String> rows(ResultSet rs) throws SQLException {
    List<String> out = new ArrayList<>();
    try (rs) {
      int n = rs.getMetaData().getColumnCount();
      while (rs.next()) {
        StringBuilder b = new StringBuilder();
        for (int i = 1; i <= n; i++) {
          if (i > 1) {
            b.append('|');
          }
          Object v = rs.getObject(i);
          if (v instanceof Timestamp ts) {
            v = ts.toLocalDateTime().toString().replace('T', ' ');
          }
          b.append(v);
        }
        out.add(b.toString());
      }
    }
    out.sort(null);
    return out;
  }

  private static void check(String what, Object want, Object got) {
    checks++;
    if (!want.equals(got)) {
      throw new AssertionError(what + ": want " + want + ", got " + got);
    }
    System.out.println("ok " + what);
  }
}
