"""The queries of :mod:`benchmarks.queries` on S3: a moto server on 127.0.0.1.

``python -m benchmarks.queries --s3`` starts :class:`benchmarks.remote.MotoServer`
(its request recorder counts the requests the server receives and the bytes
its answers carry), writes a table of ``--s3-rows`` rows there with
bcolz_store itself (``s3://bench/queries/table.bcolz``, through s3fs) and
uploads the Parquet file of the same data, then runs the same queries with:

* bcolz_store, ``scan`` and ``planned`` (as locally; the indexes are built on
  S3);
* ``pyarrow.dataset`` over the Parquet file through an ``s3fs`` filesystem
  (row-group statistics), opening files with ``default_cache_type="none"``
  so that what is fetched is what pyarrow asks for (s3fs's default, a
  read-ahead of 50 MB blocks, would fetch the whole file of a small table and
  hide what the statistics save);
* DuckDB's ``read_parquet('s3://...')`` through its httpfs extension, where
  that extension loads without a download (the ``duckdb-extension-httpfs``
  package ships it); otherwise DuckDB is left out and the JSON says why.

Every run opens the table (dataset, connection) afresh and queries it, so no
chunk or footer cache carries over from one run to the next; both are timed
(median of ``--repeats``) and, in a separate run, counted (the ``open`` row
counts the opening alone).  Point lookups: each id once per run, the median
over the ids.  blosc2 reads a
table on S3 as a ``RemoteCTable`` of a ``.b2z`` archive (one zip file of the
table's folder, indexes included): its table is built locally from the
Parquet file, packed and uploaded twice, with its SUMMARY indexes and with
FULL ones, and the faster right answer of the two counts, as locally.
"""

from __future__ import annotations

import os
import statistics
import time

from . import query_libs as L
from .query_table import Data, best, check, conditions, make_queries, write_bcolz, write_parquet

PREFIX = "queries"


def httpfs_sql(server) -> tuple:
    """``(statements, None)`` that make a DuckDB connection read the moto
    server, or ``(None, why not)``."""
    try:
        import duckdb
    except ImportError as err:
        return None, f"not installed ({err})"
    load = "LOAD httpfs"
    try:
        import duckdb_extension_httpfs as ext
        path = os.path.join(os.path.dirname(ext.__file__), "extensions",
                            f"v{duckdb.__version__}", "httpfs.duckdb_extension")
        if os.path.exists(path):
            load = f"LOAD '{path}'"
    except ImportError:
        pass
    con = duckdb.connect()
    try:
        con.execute(load)
    except duckdb.Error as err:
        return None, (f"its httpfs extension is not installed and cannot be downloaded here "
                      f"(pip install duckdb-extension-httpfs of DuckDB's version): "
                      f"{str(err).splitlines()[0]}")
    finally:
        con.close()
    host = server.endpoint.split("://", 1)[1]
    return [load, "SET enable_http_metadata_cache = false",
            (f"CREATE SECRET moto (TYPE s3, KEY_ID 'bench', SECRET 'bench', REGION 'eu-west-1', "
            f"ENDPOINT '{host}', URL_STYLE 'path', USE_SSL false)")], None


def measure_s3(side, queries, points, data, server, repeats: int, log=print) -> dict:
    """``{query key: result}``: times of opening the table and querying it,
    requests and bytes of the same; ``open`` alone is counted too."""
    out = {}
    out["open"] = dict(server.count(side.open), ok=True, error=None)
    side.close()
    named = [(q.key, [q.conds]) for q in queries]
    named.append(("point", [[("id", "==", x)] for x in points]))

    def open_and_run(conds):
        side.close()
        side.open()
        return side.run(conds)

    for key, many in named:
        values, counts, error, rows, plan = [], [], None, 0, None
        for conds in many:
            times = []
            for r in range(repeats if len(many) == 1 else 1):
                t0 = time.perf_counter()
                result = open_and_run(conds)
                times.append(time.perf_counter() - t0)
                if r == 0:
                    rows = len(side.ids(result))
                    error = error or check(side, result, data.expected(conds))
                    plan = plan or side.plan(conds)
                result = None
            values.append(statistics.median(times))
            counts.append(server.count(lambda c=conds: open_and_run(c)))
        out[key] = {"median": statistics.median(values), "min": min(values), "values": values,
                    "rows": rows, "ok": error is None, "error": error, "plan": plan,
                    "requests": statistics.median(c["requests"] for c in counts),
                    "bytes": statistics.median(c["bytes"] for c in counts)}
        info = out[key]
        log(f"    {key:<12} {info['median'] * 1e3:9.1f} ms {info['requests']:>6g} requests "
            f"{info['bytes'] / 1e6:9.2f} MB{'  WRONG: ' + error if error else ''}")
    side.close()
    return out


def _blosc2(work, parquet, fs, server, build, queries, points, data, repeats, log) -> dict:
    """blosc2's RemoteCTable of ``.b2z`` archives of its table, with the
    SUMMARY indexes and then with FULL ones; per query the faster counts."""
    from .remote import BUCKET
    local = L.Blosc2(os.path.join(work, "table.b2d"))
    build["blosc2"] = local.build(parquet)
    variants = {}
    for variant in ("summary", "full"):
        if variant == "full":
            build["blosc2"].update(local.index_full())
        archive = os.path.join(work, f"{variant}.b2z")
        local.to_b2z(archive)
        fs.put(archive, f"{BUCKET}/{PREFIX}/{variant}.b2z")
        log(f"  blosc2 ({variant.upper()} indexes, a .b2z archive)")
        side = L.Blosc2Remote(f"s3://{BUCKET}/{PREFIX}/{variant}.b2z", server.options, variant)
        variants[variant] = measure_s3(side, queries, points, data, server, repeats, log)
    return best(variants)


def run_s3(args, work: str, log=print) -> dict:
    """The S3 part of a run: ``{"rows": [...], ...}`` like the local one,
    each library's cells with ``requests`` and ``bytes``."""
    import s3fs

    from .remote import BUCKET, MotoServer
    t_start = time.perf_counter()
    os.makedirs(work, exist_ok=True)
    data = Data(args.s3_rows, args.seed)
    queries, points = make_queries(data, args.seed, args.points)
    log(f"S3: {args.s3_rows:,} rows on a moto server")
    server = MotoServer()
    build, missing, results, versions = {}, {}, {}, {}
    try:
        fs = s3fs.S3FileSystem(**server.options)
        fs.mkdir(BUCKET)
        url = f"s3://{BUCKET}/{PREFIX}/table.bcolz"
        t0 = time.perf_counter()
        write_bcolz(data, url, server.options)
        build["bcolz_store write"] = time.perf_counter() - t0
        local = os.path.join(work, "data.parquet")
        write_parquet(data, local)
        t0 = time.perf_counter()
        fs.put(local, f"{BUCKET}/{PREFIX}/data.parquet")
        build["parquet upload"] = time.perf_counter() - t0
        sides = []
        if "bcolz_store" in args.libs:
            sides += [L.BcolzStore(False, url, server.options),
                      L.BcolzStore(True, url, server.options)]
        if "pyarrow" in args.libs:
            exact = s3fs.S3FileSystem(**server.options, default_cache_type="none")
            sides.append(L.Arrow(f"{BUCKET}/{PREFIX}/data.parquet", filesystem=exact))
        if "duckdb" in args.libs:
            sql, reason = httpfs_sql(server)
            if sql:
                sides.append(L.DuckDB(f"s3://{BUCKET}/{PREFIX}/data.parquet", setup_sql=sql))
            else:
                missing["duckdb parquet"] = reason
        for side in sides:
            reason = side.missing()
            if reason:
                missing[side.name] = reason
                continue
            versions[side.name.split()[0]] = side.version()
            log(f"  {side.name}")
            if hasattr(side, "prepare"):
                build[side.name] = side.prepare()
            results[side.name] = measure_s3(side, queries, points, data, server, args.repeats,
                                            log)
        if "blosc2" in args.libs:
            reason = L.Blosc2Remote.missing()
            if reason:
                missing["blosc2"] = reason
            else:
                versions["blosc2"] = L.Blosc2.version()
                results["blosc2"] = _blosc2(work, local, fs, server, build, queries, points,
                                            data, args.repeats, log)
    finally:
        server.stop()
    rows = []
    for key, title in [("open", "open alone (counted)")] + \
            [(q.key, q.title) for q in queries] + [("point", f"`id == X` ({len(points)} ids)")]:
        libs = {name: res[key] for name, res in results.items() if key in res}
        scan = libs.get("bcolz_store scan")
        for info in libs.values():
            info["ratio_to_scan"] = (info["median"] / scan["median"]
                                     if scan and "median" in info else None)
        rows.append({"key": key, "title": title, "libs": libs,
                     "conditions": next((conditions(q.conds) for q in queries if q.key == key),
                                        None),
                     "rows": next((i["rows"] for i in libs.values() if "rows" in i), None)})
    return {"config": {"rows": args.s3_rows, "repeats": args.repeats, "points": args.points},
            "versions": versions, "build": build, "missing": missing, "rows": rows,
            "wall_s": time.perf_counter() - t_start}


def _size(nbytes) -> str:
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:,.1f} {unit}"
    return f"{nbytes:.0f} B"


def markdown(s3: dict) -> str:
    names = [n for n in ("bcolz_store scan", "bcolz_store planned", "duckdb parquet", "pyarrow",
                         "blosc2") if n in s3["missing"] or
             any(n in row["libs"] for row in s3["rows"])]
    lines = [(f"On S3 (moto on 127.0.0.1): {s3['config']['rows']:,} rows; opening the table and "
              f"querying it, median of {s3['config']['repeats']} runs; requests and bytes "
              f"fetched of one run; whole S3 part {s3['wall_s']:.0f} s."), "",
             "| query | rows | " + " | ".join(names) + " |",
             "|---|---:|" + "---:|" * len(names)]
    for row in s3["rows"]:
        cells = []
        for name in names:
            info = row["libs"].get(name)
            if info is None:
                reason = s3["missing"].get(name)
                cells.append(reason if reason == L.NOT_BUILT and row["key"] != "open" else "–")
            elif not info["ok"]:
                cells.append(f"**WRONG** ({info['error']})")
            elif "median" not in info:
                cells.append(f"{info['requests']:g} req, {_size(info['bytes'])}")
            else:
                ratio = info.get("ratio_to_scan")
                cells.append(f"{info['median'] * 1e3:.1f} ms"
                             f"{f' ({ratio:.2g}×)' if ratio is not None else ''}, "
                             f"{info['requests']:g} req, {_size(info['bytes'])}")
        rows = "-" if row["rows"] is None else f"{row['rows']:,}"
        lines.append(f"| {row['title']} | {rows} | " + " | ".join(cells) + " |")
    return "\n".join(lines + left_out(s3["missing"]))


def left_out(missing: dict) -> list:
    """Lines under a table: the libraries left out, and why."""
    notes = [f"{name}: {why}" for name, why in missing.items() if why != L.NOT_BUILT]
    return ["", "Left out: " + "; ".join(notes) + "."] if notes else []
