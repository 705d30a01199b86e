package flightd;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
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
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.manifest.BucketEntry;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
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
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.RowKind;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Java Paimon on an s3:// warehouse, through Paimon's S3 file system (the paimon-s3 plugin:
 * hadoop-aws S3A). Runs several operations in one JVM, in order:
 *
 * <pre>
 * java -cp paimon-check.jar flightd.PaimonS3Check WAREHOUSE OP...
 *   read:DB.TABLE               rows of the latest snapshot, one line each:
 *                               {"op": I, "table": "db.t", "row": {...}}
 *   write:DB.TABLE=ROWS[;k=v]   one batch commit of ROWS (a JSON-lines file; "_kind": "-D"
 *                               deletes, "+U" etc. set the row kind), with dynamic table
 *                               options (e.g. write-only=true: no compaction):
 *                               {"op": I, "table": "db.t", "snapshot": N}
 *   compact:DB.TABLE            full compaction of every bucket of a primary-key (or bucketed)
 *                               table, one COMPACT commit: {"op": I, "table": "db.t", "snapshot": N}
 * </pre>
 *
 * I is the operation's index (0 for the first after WAREHOUSE).
 *
 * The S3 connection comes from the environment, the secret never from the command line:
 * PAIMON_S3_ENDPOINT (e.g. http://127.0.0.1:7070, path-style addressing), PAIMON_S3_ACCESS_KEY,
 * PAIMON_S3_SECRET_KEY and PAIMON_S3_REGION (needed with an endpoint that is not AWS: S3A then
 * signs for us-east-2 and a server in another region answers 400 AuthorizationHeaderMalformed).
 * They become the catalog options s3.endpoint, s3.path.style.access, s3.access-key, s3.secret-key
 * and s3.endpoint.region (Paimon's S3FileIO maps s3.* to Hadoop's fs.s3a.*). A WAREHOUSE without
 * a scheme is a local directory and needs none of them.
 *
 * There is no catalog lock: a commit checks that snapshot-N does not exist, writes a temporary
 * file and renames it (on S3: HEAD, PUT, then COPY and DELETE; no If-None-Match on the target).
 * That does not exclude a concurrent committer: run it in turns with the other writers of a table.
 *
 * Column types: the atomic types of the tables flightd writes (BOOLEAN, TINYINT..BIGINT,
 * FLOAT, DOUBLE, DECIMAL, STRING, BYTES, DATE, TIMESTAMP), in PaimonCheck's JSON shape
 * (DECIMAL as a string, BYTES as base64, DATE "2024-01-01", TIMESTAMP ISO local date-time).
 */
public final class PaimonS3Check {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err); // stdout carries results only
        int rc = 0;
        try {
            if (args.length < 2) {
                System.err.println("usage: PaimonS3Check WAREHOUSE read:DB.TABLE|write:DB.TABLE=ROWS.jsonl[;k=v...]|compact:DB.TABLE ...");
                System.exit(2);
            }
            long jvmUp = ManagementFactory.getRuntimeMXBean().getUptime();
            long t0 = System.nanoTime();
            try (Catalog catalog = catalog(args[0])) {
                System.err.printf("PaimonS3Check: JVM up in %d ms, catalog opened in %d ms%n", jvmUp, (System.nanoTime() - t0) / 1_000_000);
                for (int i = 1; i < args.length; i++) {
                    String op = args[i];
                    long start = System.nanoTime();
                    if (op.startsWith("read:")) {
                        read(catalog, i - 1, op.substring(5), out);
                    } else if (op.startsWith("write:") && op.indexOf('=') > 0) {
                        int eq = op.indexOf('=');
                        String[] fileAndOptions = op.substring(eq + 1).split(";");
                        Map<String, String> dynamic = new LinkedHashMap<>();
                        for (int j = 1; j < fileAndOptions.length; j++) {
                            String[] kv = fileAndOptions[j].split("=", 2);
                            dynamic.put(kv[0].trim(), kv.length > 1 ? kv[1].trim() : "");
                        }
                        write(catalog, i - 1, op.substring(6, eq), fileAndOptions[0], dynamic, out);
                    } else if (op.startsWith("compact:")) {
                        compact(catalog, i - 1, op.substring(8), out);
                    } else {
                        throw new IllegalArgumentException("unknown operation " + op);
                    }
                    System.err.printf("PaimonS3Check: %s took %d ms%n", op, (System.nanoTime() - start) / 1_000_000);
                }
            }
        } catch (Throwable e) {
            e.printStackTrace(System.err);
            rc = 1;
        }
        out.flush();
        System.exit(rc);
    }

    static Catalog catalog(String warehouse) {
        Options options = new Options();
        options.set("warehouse", warehouse);
        // No cached tables or snapshots: a read after a write in the same run sees the commit.
        options.set("cache-enabled", "false");
        String endpoint = System.getenv("PAIMON_S3_ENDPOINT");
        if (endpoint != null && !endpoint.isEmpty()) {
            options.set("s3.endpoint", endpoint);
            options.set("s3.path.style.access", "true");
        }
        setFromEnv(options, "s3.access-key", "PAIMON_S3_ACCESS_KEY");
        setFromEnv(options, "s3.secret-key", "PAIMON_S3_SECRET_KEY");
        // fs.s3a.endpoint.region: without it S3A signs a custom endpoint's requests for us-east-2.
        setFromEnv(options, "s3.endpoint.region", "PAIMON_S3_REGION");
        return CatalogFactory.createCatalog(CatalogContext.create(options));
    }

    private static void setFromEnv(Options options, String key, String env) {
        String v = System.getenv(env);
        if (v != null && !v.isEmpty()) {
            options.set(key, v);
        }
    }

    private static void read(Catalog catalog, int op, String name, PrintStream out) throws Exception {
        Table table = catalog.getTable(Identifier.fromString(name));
        List<DataField> fields = table.rowType().getFields();
        ReadBuilder rb = table.newReadBuilder();
        List<Split> splits = rb.newScan().plan().splits();
        int[] n = {0};
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(splits)) {
            reader.forEachRemaining(row -> {
                ObjectNode obj = JSON.createObjectNode();
                ObjectNode r = obj.put("op", op).put("table", name).putObject("row");
                for (int i = 0; i < fields.size(); i++) {
                    DataType type = fields.get(i).type();
                    r.set(fields.get(i).name(), toJson(InternalRow.createFieldGetter(type, i).getFieldOrNull(row), type));
                }
                out.println(obj);
                n[0]++;
            });
        }
        System.err.printf("PaimonS3Check: read %d rows of %s (%d splits)%n", n[0], name, splits.size());
    }

    private static void write(Catalog catalog, int op, String name, String rowsFile, Map<String, String> dynamic, PrintStream out)
            throws Exception {
        Identifier id = Identifier.fromString(name);
        Table table = catalog.getTable(id);
        if (!dynamic.isEmpty()) {
            table = table.copy(dynamic);
        }
        List<DataField> fields = table.rowType().getFields();
        BatchWriteBuilder wb = table.newBatchWriteBuilder();
        int n = 0;
        try (BatchTableWrite write = wb.newWrite();
                BufferedReader in = Files.newBufferedReader(Paths.get(rowsFile), StandardCharsets.UTF_8)) {
            write.withIOManager(IOManager.create(System.getProperty("java.io.tmpdir")));
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                JsonNode node = JSON.readTree(line);
                RowKind kind = node.hasNonNull("_kind") ? RowKind.fromShortString(node.get("_kind").asText()) : RowKind.INSERT;
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
        Long snapshot = ((FileStoreTable) catalog.getTable(id)).snapshotManager().latestSnapshotId();
        System.err.printf("PaimonS3Check: wrote %d rows to %s %s, snapshot %d%n", n, name, dynamic, snapshot);
        out.println(JSON.createObjectNode().put("op", op).put("table", name).put("snapshot", snapshot));
    }

    private static void compact(Catalog catalog, int op, String name, PrintStream out) throws Exception {
        Identifier id = Identifier.fromString(name);
        FileStoreTable table = (FileStoreTable) catalog.getTable(id);
        if (table.coreOptions().bucket() == -1) {
            throw new IllegalArgumentException(name + ": compact needs a primary-key or bucketed table");
        }
        BatchWriteBuilder wb = table.newBatchWriteBuilder();
        List<CommitMessage> messages;
        try (BatchTableWrite write = wb.newWrite()) {
            write.withIOManager(IOManager.create(System.getProperty("java.io.tmpdir")));
            for (BucketEntry b : table.newSnapshotReader().bucketEntries()) {
                write.compact(b.partition(), b.bucket(), true);
            }
            messages = write.prepareCommit();
        }
        try (BatchTableCommit commit = wb.newCommit()) {
            commit.commit(messages);
        }
        Long snapshot = ((FileStoreTable) catalog.getTable(id)).snapshotManager().latestSnapshotId();
        System.err.printf("PaimonS3Check: compacted %s, snapshot %d%n", name, snapshot);
        out.println(JSON.createObjectNode().put("op", op).put("table", name).put("snapshot", snapshot));
    }

    private static JsonNode toJson(Object v, DataType type) {
        JsonNodeFactory f = JSON.getNodeFactory();
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
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return f.textNode(((Timestamp) v).toLocalDateTime().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME));
            default:
                throw new IllegalArgumentException("PaimonS3Check: unsupported type " + type);
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
                BigDecimal bd = new BigDecimal(v.asText()).setScale(dt.getScale(), RoundingMode.UNNECESSARY);
                return Decimal.fromBigDecimal(bd, dt.getPrecision(), dt.getScale());
            }
            case DATE:
                return (int) LocalDate.parse(v.asText()).toEpochDay();
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return Timestamp.fromLocalDateTime(LocalDateTime.parse(v.asText()));
            default:
                throw new IllegalArgumentException("PaimonS3Check: unsupported type " + type);
        }
    }
}
