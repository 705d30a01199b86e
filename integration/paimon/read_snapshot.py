"""Reads one snapshot of a Paimon table with pypaimon, for the Go crash test.

One request per line on stdin, one JSON answer per line on stdout, so the
caller pays for starting Python and importing pypaimon once:

    {"warehouse": "/path/warehouse", "table": "db.t", "snapshot": 12, "mode": "rows"}

(an optional "options" object adds catalog options, e.g. an S3 warehouse's
fs.s3.endpoint, fs.s3.accessKeyId, fs.s3.accessKeySecret, fs.s3.region)

answers {"snapshot": 12, "columns": [...], "rows": [[...], ...]}: every row of
the table as of that snapshot (Paimon's merge applied), in no particular
order. With "mode": "summary" (integer columns only) it answers
{"snapshot": 12, "count": n, "columns": {"c": {"sum": s, "min": a, "max": b,
"distinct": d}}} instead, and with "mode": "ipc" {"snapshot": 12, "ipc": "..."}:
the rows as an Arrow IPC stream, base64, every value exactly as pypaimon
read it. A failure answers {"error": "..."}; the process
keeps serving.

Run by hand: python read_snapshot.py WAREHOUSE DB.TABLE SNAPSHOT [rows|summary]
"""

import base64
import json
import sys
import traceback

import pyarrow as pa
import pyarrow.compute as pc
from pypaimon import CatalogFactory

_catalogs = {}


def read(req):
    warehouse = req["warehouse"]
    catalog = _catalogs.get(warehouse)
    if catalog is None:
        options = dict(req.get("options") or {})
        options["warehouse"] = warehouse
        catalog = _catalogs[warehouse] = CatalogFactory.create(options)
    snapshot = int(req["snapshot"])
    table = catalog.get_table(req["table"]).copy({"scan.snapshot-id": str(snapshot)})
    rb = table.new_read_builder()
    plan = rb.new_scan().plan()
    if plan.snapshot_id is not None and plan.snapshot_id != snapshot:
        raise RuntimeError(f"asked for snapshot {snapshot}, pypaimon planned snapshot {plan.snapshot_id}")
    data = rb.new_read().to_arrow(plan.splits())
    if req.get("mode", "rows") == "summary":
        cols = {}
        for name in data.column_names:
            col = data.column(name)
            if not pa.types.is_integer(col.type):
                raise RuntimeError(f"summary mode needs integer columns, {name} is {col.type}")
            mm = pc.min_max(col).as_py()
            cols[name] = {"sum": pc.sum(col).as_py(), "min": mm["min"], "max": mm["max"],
                          "distinct": pc.count_distinct(col).as_py()}
        return {"snapshot": snapshot, "count": data.num_rows, "columns": cols}
    if req.get("mode") == "ipc":
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, data.schema) as w:
            w.write_table(data)
        return {"snapshot": snapshot, "ipc": base64.b64encode(sink.getvalue().to_pybytes()).decode()}
    columns = data.column_names
    values = [data.column(c).to_pylist() for c in columns]
    return {"snapshot": snapshot, "columns": columns, "rows": [list(r) for r in zip(*values)]}


def answer(req):
    try:
        return read(req)
    except Exception:  # report, keep serving
        return {"error": traceback.format_exc()}


def main():
    if len(sys.argv) > 1:
        keys = ["warehouse", "table", "snapshot", "mode"]
        print(json.dumps(answer(dict(zip(keys, sys.argv[1:]))), default=str))
        return
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(answer(json.loads(line)), default=str), flush=True)


if __name__ == "__main__":
    main()
