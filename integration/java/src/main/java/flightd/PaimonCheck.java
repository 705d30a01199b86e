package flightd;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Cross-checks flightd's Paimon tables with Java Paimon, the reference implementation.
 *
 * <pre>
 * read   WAREHOUSE DB.TABLE [COL=JSON-VALUE]      rows of the latest snapshot, one JSON object a line
 * write  WAREHOUSE DB.TABLE ROWS.jsonl            one batch commit; prints the new snapshot id
 * create WAREHOUSE DB.TABLE PK|"" BUCKET COL:TYPE,... [PARTITION-COLS] [k=v;k=v]
 * </pre>
 *
 * JSON shape (both ways): column names as keys; numbers as numbers, strings as strings,
 * null as null, booleans as booleans, TIMESTAMP as ISO local date-time
 * ("2024-01-01T10:00:00"), DATE as "2024-01-01", TIME as "10:00:00", DECIMAL as a string,
 * BINARY/BYTES as base64. On write, "_kind": "-D" (or "+I", "+U", "-U") sets the row kind.
 * Only the result goes to stdout; everything else to stderr; exit code 1 on error.
 */
public final class PaimonCheck {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final DateTimeFormatter TS = DateTimeFormatter.ISO_LOCAL_DATE_TIME;

    public static void main(String[] args) throws Exception {
        // Keep stdout for results only: anything a library prints there goes to stderr.
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        try {
            if (args.length < 1) {
                usage();
            }
            switch (args[0]) {
                case "read":
                    need(args, 3);
                    read(args[1], args[2], args.length > 3 ? args[3] : "", out);
                    break;
                case "write":
                    need(args, 4);
                    write(args[1], args[2], args[3], out);
                    break;
                case "create":
                    need(args, 6);
                    create(args[1], args[2], args[3], Integer.parseInt(args[4]), args[5],
                            args.length > 6 ? args[6] : "", args.length > 7 ? args[7] : "");
                    break;
                default:
                    usage();
            }
        } catch (Throwable e) {
            e.printStackTrace(System.err);
            out.flush();
            System.exit(1);
        }
        out.flush();
        System.exit(0);
    }

    private static void need(String[] args, int n) {
        if (args.length < n) {
            usage();
        }
    }

    private static void usage() {
        System.err.println("usage: PaimonCheck read WAREHOUSE DB.TABLE [COL=JSON-VALUE]\n"
                + "       PaimonCheck write WAREHOUSE DB.TABLE ROWS.jsonl\n"
                + "       PaimonCheck create WAREHOUSE DB.TABLE PK-COLS|'' BUCKET COL:TYPE,... [PARTITION-COLS] [k=v;...]");
        System.exit(2);
    }

    private static Catalog catalog(String warehouse) {
        Options options = new Options();
        options.set("warehouse", warehouse);
        return CatalogFactory.createCatalog(CatalogContext.create(options));
    }

    // ---------------------------------------------------------------- read

    /**
     * Reads the latest snapshot. filter is "" or COL=JSON-VALUE (e.g. id=5, name="x",
     * d="1.50"): an equality predicate pushed into the scan, so Paimon prunes files and
     * row groups by the min/max statistics the writer recorded, then filters rows exactly.
     */
    private static void read(String warehouse, String name, String filter, PrintStream out) throws Exception {
        try (Catalog catalog = catalog(warehouse)) {
            Table table = catalog.getTable(Identifier.fromString(name));
            RowType rowType = table.rowType();
            List<DataField> fields = rowType.getFields();
            ReadBuilder rb = table.newReadBuilder();
            if (!filter.isBlank()) {
                int eq = filter.indexOf('=');
                String col = filter.substring(0, eq).trim();
                int idx = rowType.getFieldIndex(col);
                if (idx < 0) {
                    throw new IllegalArgumentException("no column " + col + " in " + name);
                }
                Object value = toInternal(JSON.readTree(filter.substring(eq + 1)), fields.get(idx).type());
                rb.withFilter(new org.apache.paimon.predicate.PredicateBuilder(rowType).equal(idx, value));
            }
            List<Split> splits = rb.newScan().plan().splits();
            System.err.println("PaimonCheck: " + name + (filter.isBlank() ? "" : " where " + filter) + ": " + splits.size() + " splits");
            BufferedWriter w = new BufferedWriter(new OutputStreamWriter(out, StandardCharsets.UTF_8));
            try (RecordReader<InternalRow> reader = rb.newRead().executeFilter().createReader(splits)) {
                reader.forEachRemaining(row -> {
                    ObjectNode obj = JSON.createObjectNode();
                    for (int i = 0; i < fields.size(); i++) {
                        put(obj, fields.get(i).name(), fields.get(i).type(), row, i);
                    }
                    try {
                        w.write(JSON.writeValueAsString(obj));
                        w.write('\n');
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                });
            }
            w.flush();
        }
    }

    private static void put(ObjectNode obj, String name, DataType type, InternalRow row, int i) {
        if (row.isNullAt(i)) {
            obj.putNull(name);
            return;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                obj.put(name, row.getBoolean(i));
                break;
            case TINYINT:
                obj.put(name, row.getByte(i));
                break;
            case SMALLINT:
                obj.put(name, row.getShort(i));
                break;
            case INTEGER:
                obj.put(name, row.getInt(i));
                break;
            case BIGINT:
                obj.put(name, row.getLong(i));
                break;
            case FLOAT:
                obj.put(name, row.getFloat(i));
                break;
            case DOUBLE:
                obj.put(name, row.getDouble(i));
                break;
            case CHAR:
            case VARCHAR:
                obj.put(name, row.getString(i).toString());
                break;
            case BINARY:
            case VARBINARY:
                obj.put(name, Base64.getEncoder().encodeToString(row.getBinary(i)));
                break;
            case DECIMAL: {
                DecimalType dt = (DecimalType) type;
                obj.put(name, row.getDecimal(i, dt.getPrecision(), dt.getScale()).toBigDecimal().toPlainString());
                break;
            }
            case DATE:
                obj.put(name, LocalDate.ofEpochDay(row.getInt(i)).toString());
                break;
            case TIME_WITHOUT_TIME_ZONE:
                obj.put(name, LocalTime.ofNanoOfDay(row.getInt(i) * 1_000_000L).format(DateTimeFormatter.ISO_LOCAL_TIME));
                break;
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE: {
                int precision = org.apache.paimon.types.DataTypeChecks.getPrecision(type);
                obj.put(name, row.getTimestamp(i, precision).toLocalDateTime().format(TS));
                break;
            }
            default: {
                // ARRAY, MAP, ROW, ...: not compared by the tests; Paimon's own rendering.
                Object v = InternalRow.createFieldGetter(type, i).getFieldOrNull(row);
                obj.put(name, String.valueOf(v));
            }
        }
    }

    // ---------------------------------------------------------------- write

    private static void write(String warehouse, String name, String rowsFile, PrintStream out) throws Exception {
        try (Catalog catalog = catalog(warehouse)) {
            Identifier id = Identifier.fromString(name);
            Table table = catalog.getTable(id);
            List<DataField> fields = table.rowType().getFields();
            BatchWriteBuilder wb = table.newBatchWriteBuilder();
            int n = 0;
            try (BatchTableWrite write = wb.newWrite();
                    BufferedReader in = Files.newBufferedReader(Paths.get(rowsFile), StandardCharsets.UTF_8)) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.isBlank()) {
                        continue;
                    }
                    JsonNode node = JSON.readTree(line);
                    RowKind kind = RowKind.INSERT;
                    if (node.hasNonNull("_kind")) {
                        kind = RowKind.fromShortString(node.get("_kind").asText());
                    }
                    Object[] values = new Object[fields.size()];
                    for (int i = 0; i < fields.size(); i++) {
                        values[i] = toInternal(node.get(fields.get(i).name()), fields.get(i).type());
                    }
                    write.write(GenericRow.ofKind(kind, values));
                    n++;
                }
                List<CommitMessage> messages = write.prepareCommit();
                try (BatchTableCommit commit = wb.newCommit()) {
                    commit.commit(messages);
                }
            }
            FileStoreTable after = (FileStoreTable) catalog.getTable(id);
            Long snap = after.snapshotManager().latestSnapshotId();
            System.err.println("PaimonCheck: wrote " + n + " rows to " + name + ", snapshot " + snap);
            out.println(snap);
        }
    }

    private static Object toInternal(JsonNode v, DataType type) {
        if (v == null || v.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return v.asBoolean();
            case TINYINT:
                return (byte) v.asInt();
            case SMALLINT:
                return (short) v.asInt();
            case INTEGER:
                return v.asInt();
            case BIGINT:
                return v.asLong();
            case FLOAT:
                return (float) v.asDouble();
            case DOUBLE:
                return v.asDouble();
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(v.asText());
            case BINARY:
            case VARBINARY:
                return Base64.getDecoder().decode(v.asText());
            case DECIMAL: {
                DecimalType dt = (DecimalType) type;
                BigDecimal bd = new BigDecimal(v.asText()).setScale(dt.getScale(), java.math.RoundingMode.UNNECESSARY);
                return Decimal.fromBigDecimal(bd, dt.getPrecision(), dt.getScale());
            }
            case DATE:
                return (int) LocalDate.parse(v.asText()).toEpochDay();
            case TIME_WITHOUT_TIME_ZONE:
                return (int) (LocalTime.parse(v.asText()).toNanoOfDay() / 1_000_000L);
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return Timestamp.fromLocalDateTime(parseTimestamp(v.asText()));
            default:
                throw new IllegalArgumentException("PaimonCheck write: unsupported type " + type);
        }
    }

    private static LocalDateTime parseTimestamp(String s) {
        String t = s.trim().replace(' ', 'T');
        if (t.endsWith("Z") || t.matches(".*[+-]\\d\\d:\\d\\d$")) {
            return OffsetDateTime.parse(t).atZoneSameInstant(java.time.ZoneOffset.UTC).toLocalDateTime();
        }
        return LocalDateTime.parse(t);
    }

    // ---------------------------------------------------------------- create

    private static void create(String warehouse, String name, String pk, int bucket, String cols,
            String partition, String opts) throws Exception {
        Schema.Builder b = Schema.newBuilder();
        for (String col : splitTopLevel(cols)) {
            int colon = col.indexOf(':');
            if (colon <= 0) {
                throw new IllegalArgumentException("column must be name:TYPE, got " + col);
            }
            b.column(col.substring(0, colon).trim(), parseType(col.substring(colon + 1)));
        }
        if (!pk.isBlank()) {
            b.primaryKey(splitNames(pk));
        }
        if (!partition.isBlank()) {
            b.partitionKeys(splitNames(partition));
        }
        b.option("bucket", Integer.toString(bucket));
        for (String kv : opts.split(";")) {
            if (kv.isBlank()) {
                continue;
            }
            int eq = kv.indexOf('=');
            b.option(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
        }
        try (Catalog catalog = catalog(warehouse)) {
            Identifier id = Identifier.fromString(name);
            catalog.createDatabase(id.getDatabaseName(), true);
            catalog.createTable(id, b.build(), false);
            System.err.println("PaimonCheck: created " + name);
        }
    }

    private static List<String> splitNames(String s) {
        List<String> out = new ArrayList<>();
        for (String p : s.split(",")) {
            if (!p.isBlank()) {
                out.add(p.trim());
            }
        }
        return out;
    }

    /** Splits "a:INT,b:DECIMAL(10,2)" on commas outside parentheses. */
    private static List<String> splitTopLevel(String s) {
        List<String> out = new ArrayList<>();
        int depth = 0;
        StringBuilder cur = new StringBuilder();
        for (char c : s.toCharArray()) {
            if (c == '(' || c == '<') {
                depth++;
            } else if (c == ')' || c == '>') {
                depth--;
            }
            if (c == ',' && depth == 0) {
                out.add(cur.toString().trim());
                cur.setLength(0);
            } else {
                cur.append(c);
            }
        }
        if (cur.length() > 0) {
            out.add(cur.toString().trim());
        }
        return out;
    }

    private static final Pattern TYPE = Pattern.compile("([A-Z_ ]+?)\\s*(?:\\((\\d+)\\s*(?:,\\s*(\\d+))?\\))?\\s*(NOT NULL)?");

    static DataType parseType(String s) {
        Matcher m = TYPE.matcher(s.trim().toUpperCase(Locale.ROOT));
        if (!m.matches()) {
            throw new IllegalArgumentException("cannot parse type " + s);
        }
        String base = m.group(1).trim();
        Integer p = m.group(2) == null ? null : Integer.parseInt(m.group(2));
        Integer sc = m.group(3) == null ? null : Integer.parseInt(m.group(3));
        DataType t;
        switch (base) {
            case "BOOLEAN": t = DataTypes.BOOLEAN(); break;
            case "TINYINT": t = DataTypes.TINYINT(); break;
            case "SMALLINT": t = DataTypes.SMALLINT(); break;
            case "INT":
            case "INTEGER": t = DataTypes.INT(); break;
            case "BIGINT": t = DataTypes.BIGINT(); break;
            case "FLOAT": t = DataTypes.FLOAT(); break;
            case "DOUBLE": t = DataTypes.DOUBLE(); break;
            case "STRING": t = DataTypes.STRING(); break;
            case "VARCHAR": t = p == null ? DataTypes.STRING() : DataTypes.VARCHAR(p); break;
            case "CHAR": t = DataTypes.CHAR(p == null ? 1 : p); break;
            case "BYTES": t = DataTypes.BYTES(); break;
            case "VARBINARY": t = p == null ? DataTypes.BYTES() : DataTypes.VARBINARY(p); break;
            case "BINARY": t = DataTypes.BINARY(p == null ? 1 : p); break;
            case "DATE": t = DataTypes.DATE(); break;
            case "TIME": t = DataTypes.TIME(p == null ? 0 : p); break;
            case "TIMESTAMP": t = DataTypes.TIMESTAMP(p == null ? 6 : p); break;
            case "TIMESTAMP_LTZ":
            case "TIMESTAMP WITH LOCAL TIME ZONE": t = DataTypes.TIMESTAMP_WITH_LOCAL_TIME_ZONE(p == null ? 6 : p); break;
            case "DECIMAL": t = DataTypes.DECIMAL(p == null ? 10 : p, sc == null ? 0 : sc); break;
            default: throw new IllegalArgumentException("unsupported type " + s + " (known: " + Arrays.asList(
                    "BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "STRING", "VARCHAR(n)", "CHAR(n)",
                    "BYTES", "BINARY(n)", "DATE", "TIME(p)", "TIMESTAMP(p)", "TIMESTAMP_LTZ(p)", "DECIMAL(p,s)") + ")");
        }
        return m.group(4) != null ? t.copy(false) : t;
    }
}
