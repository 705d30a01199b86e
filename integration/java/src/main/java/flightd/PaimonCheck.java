package flightd;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.paimon.Snapshot;
import org.apache.paimon.append.AppendCompactCoordinator;
import org.apache.paimon.append.AppendCompactTask;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.deletionvectors.BitmapDeletionVector;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.deletionvectors.append.BaseAppendDeleteFileMaintainer;
import org.apache.paimon.index.IndexFileHandler;
import org.apache.paimon.index.IndexFileMeta;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.manifest.BucketEntry;
import org.apache.paimon.manifest.FileKind;
import org.apache.paimon.manifest.IndexManifestEntry;
import org.apache.paimon.operation.BaseAppendFileStoreWrite;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.DeletionFile;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.MapType;
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
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Cross-checks flightd's Paimon tables with Java Paimon, the reference implementation.
 *
 * <pre>
 * read     WAREHOUSE DB.TABLE [COL=JSON-VALUE]    rows of the latest snapshot, one JSON object a line
 * write    WAREHOUSE DB.TABLE ROWS.jsonl [k=v;..] one batch commit (with dynamic table options);
 *                                                 prints the new snapshot id
 * create   WAREHOUSE DB.TABLE PK|"" BUCKET COL:TYPE,... [PARTITION-COLS] [k=v;k=v]
 * alter    WAREHOUSE DB.TABLE CHANGE;CHANGE...    schema changes, one new schema: add:COL:TYPE,
 *                                                 rename:COL:NEW, type:COL:TYPE, drop:COL
 *                                                 (COL may be a dotted path: ROW fields, element, value),
 *                                                 set:KEY=VALUE (a table option)
 * compact  WAREHOUSE DB.TABLE                     full compaction (every bucket of a primary-key or
 *                                                 bucketed table; the append compaction coordinator
 *                                                 for a bucket-unaware table); prints the snapshot id
 * dvdelete WAREHOUSE DB.TABLE COL=JSON-VALUE,...  deletes the rows of an append table whose COL is one
 *                                                 of the values with deletion vectors, as Spark's
 *                                                 DELETE does; prints the snapshot id
 * dvinfo   WAREHOUSE DB.TABLE                     JSON: data files of the latest snapshot, level-0
 *                                                 files, files with a deletion vector, rows deleted
 * session                                         commands from stdin, one JVM for all: each line a
 *                                                 JSON array [COMMAND, ARG...], each answer a JSON
 *                                                 line {"ok":true,"out":STDOUT} or {"ok":false,"err":..}
 * </pre>
 *
 * JSON shape (both ways): column names as keys; numbers as numbers, strings as strings,
 * null as null, booleans as booleans, TIMESTAMP as ISO local date-time
 * ("2024-01-01T10:00:00"), DATE as "2024-01-01", TIME as "10:00:00", DECIMAL as a string,
 * BINARY/BYTES as base64, ARRAY as an array, MAP as an array of [key, value] pairs, ROW as an
 * object by field name. On write, "_kind": "-D" (or "+I", "+U", "-U") sets the row kind.
 * Only the result goes to stdout; everything else to stderr; exit code 1 on error.
 */
public final class PaimonCheck {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final DateTimeFormatter TS = DateTimeFormatter.ISO_LOCAL_DATE_TIME;

    public static void main(String[] args) throws Exception {
        // Keep stdout for results only: anything a library prints there goes to stderr.
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        if (args.length == 1 && args[0].equals("session")) {
            session(out);
            out.flush();
            System.exit(0);
        }
        try {
            run(args, out);
        } catch (UsageException e) {
            System.err.println(e.getMessage());
            out.flush();
            System.exit(2);
        } catch (Throwable e) {
            e.printStackTrace(System.err);
            out.flush();
            System.exit(1);
        }
        out.flush();
        System.exit(0);
    }

    /**
     * One JVM for many commands: reads one JSON array of strings (a command and its
     * arguments, as on the command line) a line from stdin, and answers each with one JSON
     * line on stdout, {"ok": true, "out": STDOUT} or {"ok": false, "err": MESSAGE}, until
     * stdin ends. Starting the JVM costs more than most commands.
     */
    private static void session(PrintStream out) throws Exception {
        BufferedReader in = new BufferedReader(new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode reply = JSON.createObjectNode();
            java.io.ByteArrayOutputStream buf = new java.io.ByteArrayOutputStream();
            try (PrintStream cmdOut = new PrintStream(buf, false, StandardCharsets.UTF_8)) {
                JsonNode req = JSON.readTree(line);
                if (!req.isArray()) {
                    throw new UsageException("session: want a JSON array of strings, got " + line);
                }
                String[] args = new String[req.size()];
                for (int i = 0; i < args.length; i++) {
                    args[i] = req.get(i).asText();
                }
                run(args, cmdOut);
                cmdOut.flush();
                reply.put("ok", true);
                reply.put("out", buf.toString(StandardCharsets.UTF_8));
            } catch (Throwable e) {
                e.printStackTrace(System.err);
                java.io.StringWriter sw = new java.io.StringWriter();
                e.printStackTrace(new java.io.PrintWriter(sw));
                reply.put("ok", false);
                reply.put("err", sw.toString());
            }
            out.println(JSON.writeValueAsString(reply));
            out.flush();
        }
    }

    /** Runs one command; its result goes to out. */
    private static void run(String[] args, PrintStream out) throws Exception {
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
                write(args[1], args[2], args[3], args.length > 4 ? args[4] : "", out);
                break;
            case "alter":
                need(args, 4);
                alter(args[1], args[2], args[3]);
                break;
            case "compact":
                need(args, 3);
                compact(args[1], args[2], out);
                break;
            case "dvdelete":
                need(args, 4);
                dvDelete(args[1], args[2], args[3], out);
                break;
            case "dvinfo":
                need(args, 3);
                dvInfo(args[1], args[2], out);
                break;
            case "create":
                need(args, 6);
                create(args[1], args[2], args[3], Integer.parseInt(args[4]), args[5],
                        args.length > 6 ? args[6] : "", args.length > 7 ? args[7] : "");
                break;
            default:
                usage();
        }
    }

    /** A command line that does not name a command with its arguments. */
    private static final class UsageException extends IllegalArgumentException {
        UsageException(String message) {
            super(message);
        }
    }

    private static void need(String[] args, int n) {
        if (args.length < n) {
            usage();
        }
    }

    private static void usage() {
        throw new UsageException("usage: PaimonCheck read WAREHOUSE DB.TABLE [COL=JSON-VALUE]\n"
                + "       PaimonCheck write WAREHOUSE DB.TABLE ROWS.jsonl [k=v;...]\n"
                + "       PaimonCheck create WAREHOUSE DB.TABLE PK-COLS|'' BUCKET COL:TYPE,... [PARTITION-COLS] [k=v;...]\n"
                + "       PaimonCheck alter WAREHOUSE DB.TABLE add:COL:TYPE;rename:COL:NEW;type:COL:TYPE;drop:COL;set:KEY=VALUE;reset:KEY\n"
                + "       PaimonCheck compact WAREHOUSE DB.TABLE\n"
                + "       PaimonCheck dvdelete WAREHOUSE DB.TABLE COL=JSON-VALUE,...\n"
                + "       PaimonCheck dvinfo WAREHOUSE DB.TABLE\n"
                + "       PaimonCheck session   (commands as JSON arrays on stdin, one a line)");
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
        obj.set(name, toJson(InternalRow.createFieldGetter(type, i).getFieldOrNull(row), type));
    }

    /** Renders an internal value of type (null allowed) in the JSON shape of the class comment. */
    private static JsonNode toJson(Object v, DataType type) {
        com.fasterxml.jackson.databind.node.JsonNodeFactory f = JSON.getNodeFactory();
        if (v == null) {
            return f.nullNode();
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return f.booleanNode((Boolean) v);
            case TINYINT:
                return f.numberNode((Byte) v);
            case SMALLINT:
                return f.numberNode((Short) v);
            case INTEGER:
                return f.numberNode((Integer) v);
            case BIGINT:
                return f.numberNode((Long) v);
            case FLOAT:
                return f.numberNode((Float) v);
            case DOUBLE:
                return f.numberNode((Double) v);
            case CHAR:
            case VARCHAR:
                return f.textNode(v.toString());
            case BINARY:
            case VARBINARY:
                return f.textNode(Base64.getEncoder().encodeToString((byte[]) v));
            case DECIMAL:
                return f.textNode(((Decimal) v).toBigDecimal().toPlainString());
            case DATE:
                return f.textNode(LocalDate.ofEpochDay((Integer) v).toString());
            case TIME_WITHOUT_TIME_ZONE:
                return f.textNode(LocalTime.ofNanoOfDay((Integer) v * 1_000_000L).format(DateTimeFormatter.ISO_LOCAL_TIME));
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return f.textNode(((Timestamp) v).toLocalDateTime().format(TS));
            case ARRAY: {
                DataType et = ((ArrayType) type).getElementType();
                InternalArray a = (InternalArray) v;
                InternalArray.ElementGetter g = InternalArray.createElementGetter(et);
                ArrayNode out = f.arrayNode();
                for (int i = 0; i < a.size(); i++) {
                    out.add(toJson(g.getElementOrNull(a, i), et));
                }
                return out;
            }
            case MAP: {
                MapType mt = (MapType) type;
                InternalMap m = (InternalMap) v;
                InternalArray.ElementGetter kg = InternalArray.createElementGetter(mt.getKeyType());
                InternalArray.ElementGetter vg = InternalArray.createElementGetter(mt.getValueType());
                ArrayNode out = f.arrayNode();
                for (int i = 0; i < m.size(); i++) {
                    ArrayNode pair = f.arrayNode();
                    pair.add(toJson(kg.getElementOrNull(m.keyArray(), i), mt.getKeyType()));
                    pair.add(toJson(vg.getElementOrNull(m.valueArray(), i), mt.getValueType()));
                    out.add(pair);
                }
                return out;
            }
            case ROW: {
                List<DataField> fs = ((RowType) type).getFields();
                InternalRow r = (InternalRow) v;
                ObjectNode out = f.objectNode();
                for (int i = 0; i < fs.size(); i++) {
                    put(out, fs.get(i).name(), fs.get(i).type(), r, i);
                }
                return out;
            }
            default:
                return f.textNode(String.valueOf(v));
        }
    }

    // ---------------------------------------------------------------- write

    private static void write(String warehouse, String name, String rowsFile, String dynamicOptions, PrintStream out) throws Exception {
        try (Catalog catalog = catalog(warehouse)) {
            Identifier id = Identifier.fromString(name);
            Table table = catalog.getTable(id);
            Map<String, String> dyn = parseOptions(dynamicOptions);
            if (!dyn.isEmpty()) {
                table = table.copy(dyn);
            }
            List<DataField> fields = table.rowType().getFields();
            BatchWriteBuilder wb = table.newBatchWriteBuilder();
            int n = 0;
            try (BatchTableWrite write = wb.newWrite();
                    BufferedReader in = Files.newBufferedReader(Paths.get(rowsFile), StandardCharsets.UTF_8)) {
                write.withIOManager(ioManager()); // lookup compaction (deletion vectors) spills to disk
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
            System.err.println("PaimonCheck: wrote " + n + " rows to " + name + ", snapshot " + latestSnapshot(catalog, id));
            out.println(latestSnapshot(catalog, id));
        }
    }

    private static IOManager ioManager() {
        return IOManager.create(System.getProperty("java.io.tmpdir"));
    }

    private static Long latestSnapshot(Catalog catalog, Identifier id) throws Exception {
        return ((FileStoreTable) catalog.getTable(id)).snapshotManager().latestSnapshotId();
    }

    private static Map<String, String> parseOptions(String opts) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String kv : opts.split(";")) {
            if (kv.isBlank()) {
                continue;
            }
            int eq = kv.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("option must be k=v, got " + kv);
            }
            out.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
        }
        return out;
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
            case ARRAY: {
                DataType et = ((ArrayType) type).getElementType();
                Object[] elems = new Object[v.size()];
                for (int i = 0; i < v.size(); i++) {
                    elems[i] = toInternal(v.get(i), et);
                }
                return new GenericArray(elems);
            }
            case MAP: {
                MapType mt = (MapType) type;
                Map<Object, Object> m = new LinkedHashMap<>();
                for (JsonNode pair : v) {
                    m.put(toInternal(pair.get(0), mt.getKeyType()), toInternal(pair.get(1), mt.getValueType()));
                }
                return new GenericMap(m);
            }
            case ROW: {
                List<DataField> fs = ((RowType) type).getFields();
                Object[] vals = new Object[fs.size()];
                for (int i = 0; i < fs.size(); i++) {
                    vals[i] = toInternal(v.get(fs.get(i).name()), fs.get(i).type());
                }
                return GenericRow.of(vals);
            }
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

    // ---------------------------------------------------------------- alter

    /** Applies CHANGE;CHANGE... as one schema change (one new schema-N). */
    private static void alter(String warehouse, String name, String changes) throws Exception {
        List<SchemaChange> list = new ArrayList<>();
        for (String c : changes.split(";")) {
            if (c.isBlank()) {
                continue;
            }
            String[] p = c.trim().split(":", 3);
            switch (p[0]) {
                case "add":
                    list.add(SchemaChange.addColumn(p[1].split("\\."), parseType(p[2]), null, null));
                    break;
                case "rename":
                    list.add(SchemaChange.renameColumn(p[1].split("\\."), p[2]));
                    break;
                case "type":
                    list.add(SchemaChange.updateColumnType(p[1].split("\\."), parseType(p[2]), false));
                    break;
                case "drop":
                    list.add(SchemaChange.dropColumn(p[1].split("\\.")));
                    break;
                case "set": {
                    String kv = c.trim().substring(4);
                    int eq = kv.indexOf('=');
                    if (eq <= 0) {
                        throw new IllegalArgumentException("set: want set:KEY=VALUE, got " + c);
                    }
                    list.add(SchemaChange.setOption(kv.substring(0, eq), kv.substring(eq + 1)));
                    break;
                }
                case "reset":
                    list.add(SchemaChange.removeOption(c.trim().substring(6)));
                    break;
                default:
                    throw new IllegalArgumentException("unknown schema change " + c);
            }
        }
        try (Catalog catalog = catalog(warehouse)) {
            catalog.alterTable(Identifier.fromString(name), list, false);
            System.err.println("PaimonCheck: altered " + name + ": " + changes);
        }
    }

    // ---------------------------------------------------------------- compact

    private static void compact(String warehouse, String name, PrintStream out) throws Exception {
        try (Catalog catalog = catalog(warehouse)) {
            Identifier id = Identifier.fromString(name);
            FileStoreTable table = (FileStoreTable) catalog.getTable(id);
            List<CommitMessage> messages = new ArrayList<>();
            BatchWriteBuilder wb = table.newBatchWriteBuilder();
            if (table.primaryKeys().isEmpty() && table.coreOptions().bucket() == -1) {
                List<AppendCompactTask> tasks = new AppendCompactCoordinator(table, false).run();
                BaseAppendFileStoreWrite write = (BaseAppendFileStoreWrite) table.store().newWrite("paimon-check-compact");
                for (AppendCompactTask task : tasks) {
                    messages.add(task.doCompact(table, write));
                }
                write.close();
                System.err.println("PaimonCheck: " + tasks.size() + " append compaction tasks");
            } else {
                try (BatchTableWrite write = wb.newWrite()) {
                    write.withIOManager(ioManager());
                    for (BucketEntry b : table.newSnapshotReader().bucketEntries()) {
                        write.compact(b.partition(), b.bucket(), true);
                    }
                    messages.addAll(write.prepareCommit());
                }
            }
            try (BatchTableCommit commit = wb.newCommit()) {
                commit.commit(messages);
            }
            out.println(latestSnapshot(catalog, id));
        }
    }

    // ---------------------------------------------------------------- deletion vectors

    /**
     * Deletes, with deletion vectors, the rows of an append table whose column is one of the given
     * values: every data file is read in file order (row positions), the matching positions are
     * added to the file's deletion vector and the new index files are committed, as Spark's
     * DELETE on a deletion-vector append table does.
     */
    private static void dvDelete(String warehouse, String name, String filter, PrintStream out) throws Exception {
        try (Catalog catalog = catalog(warehouse)) {
            Identifier id = Identifier.fromString(name);
            FileStoreTable table = (FileStoreTable) catalog.getTable(id);
            if (!table.primaryKeys().isEmpty() || !table.coreOptions().deletionVectorsEnabled()) {
                throw new IllegalArgumentException(name + ": dvdelete needs an append table with deletion vectors");
            }
            int eq = filter.indexOf('=');
            String col = filter.substring(0, eq).trim();
            RowType rowType = table.rowType();
            int idx = rowType.getFieldIndex(col);
            if (idx < 0) {
                throw new IllegalArgumentException("no column " + col + " in " + name);
            }
            DataType colType = rowType.getTypeAt(idx);
            Set<Object> values = new HashSet<>();
            for (JsonNode v : JSON.readTree("[" + filter.substring(eq + 1) + "]")) {
                values.add(toInternal(v, colType));
            }
            InternalRow.FieldGetter getter = InternalRow.createFieldGetter(colType, idx);
            Snapshot snapshot = table.snapshotManager().latestSnapshot();
            IndexFileHandler indexHandler = table.store().newIndexFileHandler();
            Map<String, BaseAppendDeleteFileMaintainer> maintainers = new LinkedHashMap<>();
            int deleted = 0;
            for (DataSplit split : table.newSnapshotReader().read().dataSplits()) {
                for (DataFileMeta file : split.dataFiles()) {
                    DataSplit one = DataSplit.builder()
                            .withSnapshot(split.snapshotId())
                            .withPartition(split.partition())
                            .withBucket(split.bucket())
                            .withBucketPath(split.bucketPath())
                            .withTotalBuckets(split.totalBuckets())
                            .withDataFiles(Collections.singletonList(file))
                            .rawConvertible(true)
                            .isStreaming(false)
                            .build();
                    BitmapDeletionVector dv = new BitmapDeletionVector();
                    long[] pos = {0};
                    try (RecordReader<InternalRow> reader = table.newReadBuilder().newRead().createReader(one)) {
                        reader.forEachRemaining(row -> {
                            Object v = getter.getFieldOrNull(row);
                            if (v != null && values.contains(v)) {
                                dv.delete(pos[0]);
                            }
                            pos[0]++;
                        });
                    }
                    if (dv.isEmpty()) {
                        continue;
                    }
                    deleted += (int) dv.getCardinality();
                    String key = Arrays.toString(split.partition().toBytes()) + "/" + split.bucket();
                    BaseAppendDeleteFileMaintainer m = maintainers.get(key);
                    if (m == null) {
                        m = table.coreOptions().bucket() == -1
                                ? BaseAppendDeleteFileMaintainer.forUnawareAppend(indexHandler, snapshot, split.partition())
                                : BaseAppendDeleteFileMaintainer.forBucketedAppend(indexHandler, snapshot, split.partition(), split.bucket());
                        maintainers.put(key, m);
                    }
                    m.notifyNewDeletionVector(file.fileName(), dv);
                }
            }
            List<CommitMessage> messages = new ArrayList<>();
            for (BaseAppendDeleteFileMaintainer m : maintainers.values()) {
                List<IndexFileMeta> added = new ArrayList<>();
                List<IndexFileMeta> removed = new ArrayList<>();
                for (IndexManifestEntry e : m.persist()) {
                    (e.kind() == FileKind.ADD ? added : removed).add(e.indexFile());
                }
                messages.add(new CommitMessageImpl(m.getPartition(), m.getBucket(), null,
                        new DataIncrement(Collections.emptyList(), Collections.emptyList(), Collections.emptyList(), added, removed),
                        CompactIncrement.emptyIncrement()));
            }
            try (BatchTableCommit commit = table.newBatchWriteBuilder().newCommit()) {
                commit.commit(messages);
            }
            System.err.println("PaimonCheck: dvdelete " + name + " " + filter + ": " + deleted + " positions");
            out.println(latestSnapshot(catalog, id));
        }
    }

    /** Prints what the latest snapshot holds: data files, level-0 files, deletion vectors. */
    private static void dvInfo(String warehouse, String name, PrintStream out) throws Exception {
        try (Catalog catalog = catalog(warehouse)) {
            FileStoreTable table = (FileStoreTable) catalog.getTable(Identifier.fromString(name));
            long files = 0, level0 = 0, withDv = 0, deletedRows = 0;
            for (DataSplit split : table.newSnapshotReader().read().dataSplits()) {
                List<DeletionFile> dfs = split.deletionFiles().orElse(Collections.emptyList());
                for (int i = 0; i < split.dataFiles().size(); i++) {
                    files++;
                    if (split.dataFiles().get(i).level() == 0) {
                        level0++;
                    }
                    DeletionFile df = i < dfs.size() ? dfs.get(i) : null;
                    if (df != null) {
                        withDv++;
                        deletedRows += df.cardinality() == null ? 0 : df.cardinality();
                    }
                }
            }
            ObjectNode obj = JSON.createObjectNode();
            obj.put("files", files);
            obj.put("level0", level0);
            obj.put("withDv", withDv);
            obj.put("deletedRows", deletedRows);
            out.println(JSON.writeValueAsString(obj));
        }
    }

    // ---------------------------------------------------------------- create

    private static void create(String warehouse, String name, String pk, int bucket, String cols,
            String partition, String opts) throws Exception {
        Schema.Builder b = Schema.newBuilder();
        for (String col : splitTopLevel(cols, ',')) {
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
        parseOptions(opts).forEach(b::option);
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

    /** Splits "a:INT,b:DECIMAL(10,2),c:MAP<INT,STRING>" on sep outside parentheses and angle brackets. */
    private static List<String> splitTopLevel(String s, char sep) {
        List<String> out = new ArrayList<>();
        int depth = 0;
        StringBuilder cur = new StringBuilder();
        for (char c : s.toCharArray()) {
            if (c == '(' || c == '<') {
                depth++;
            } else if (c == ')' || c == '>') {
                depth--;
            }
            if (c == sep && depth == 0) {
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
    private static final Pattern NESTED = Pattern.compile("(?s)(ARRAY|MAP|ROW)\\s*<(.*)>\\s*(NOT NULL)?", Pattern.CASE_INSENSITIVE);

    /** Parses a type: the atomic types below, ARRAY<T>, MAP<K, V> and ROW<name T, ...>. */
    static DataType parseType(String s) {
        Matcher n = NESTED.matcher(s.trim());
        if (n.matches()) {
            String inner = n.group(2);
            DataType t;
            switch (n.group(1).toUpperCase(Locale.ROOT)) {
                case "ARRAY":
                    t = DataTypes.ARRAY(parseType(inner));
                    break;
                case "MAP": {
                    List<String> kv = splitTopLevel(inner, ',');
                    if (kv.size() != 2) {
                        throw new IllegalArgumentException("MAP needs a key and a value type: " + s);
                    }
                    t = DataTypes.MAP(parseType(kv.get(0)), parseType(kv.get(1)));
                    break;
                }
                default: {
                    List<DataField> fs = new ArrayList<>();
                    int i = 0;
                    for (String f : splitTopLevel(inner, ',')) {
                        String[] p = f.trim().split("\\s+", 2);
                        fs.add(DataTypes.FIELD(i++, p[0], parseType(p[1])));
                    }
                    t = DataTypes.ROW(fs.toArray(new DataField[0]));
                }
            }
            return n.group(3) != null ? t.copy(false) : t;
        }
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
                    "BYTES", "BINARY(n)", "DATE", "TIME(p)", "TIMESTAMP(p)", "TIMESTAMP_LTZ(p)", "DECIMAL(p,s)",
                    "ARRAY<T>", "MAP<K,V>", "ROW<name T,...>") + ")");
        }
        return m.group(4) != null ? t.copy(false) : t;
    }
}
