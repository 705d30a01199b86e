import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.zip.CRC32;

/**
 * Reads a query's whole result through the Arrow Flight SQL JDBC driver, as many times as asked,
 * and prints one line per read: "rows N checksum C", where C is the sum (mod 2^64) of the CRC-32
 * of each row rendered as its values' strings joined by '|' (NULL for a null): the same checksum
 * integration/cluster_reads_test.go and python/cluster_read.py compute, in any row order. The
 * driver fetches every endpoint of the result where its locations say (integration/
 * cluster_reads_test.go).
 *
 * <p>Usage: java -cp jdbc-check.jar:lib/* JdbcRead host:port sql reads [url-parameters]; the URL
 * parameters default to useEncryption=false. Exits 1, with the error, when a read fails.
 */
public final class JdbcRead {
  public static void main(String[] args) throws Exception {
    String params = args.length > 3 ? args[3] : "useEncryption=false";
    String url = "jdbc:arrow-flight-sql://" + args[0] + "?" + params;
    String sql = args[1];
    int reads = Integer.parseInt(args[2]);
    try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
      for (int r = 0; r < reads; r++) {
        read(s, sql);
      }
    } catch (SQLException e) {
      System.out.println("FAIL " + e);
      e.printStackTrace(System.out);
      System.exit(1);
    }
  }

  private static void read(Statement s, String sql) throws SQLException {
    long rows = 0;
    long sum = 0;
    try (ResultSet rs = s.executeQuery(sql)) {
      int n = rs.getMetaData().getColumnCount();
      StringBuilder b = new StringBuilder();
      CRC32 crc = new CRC32();
      while (rs.next()) {
        b.setLength(0);
        for (int i = 1; i <= n; i++) {
          if (i > 1) {
            b.append('|');
          }
          Object v = rs.getObject(i);
          b.append(v == null ? "NULL" : v.toString());
        }
        crc.reset();
        crc.update(b.toString().getBytes(StandardCharsets.UTF_8));
        sum += crc.getValue();
        rows++;
      }
    }
    System.out.println("rows " + rows + " checksum " + Long.toUnsignedString(sum));
  }
}
