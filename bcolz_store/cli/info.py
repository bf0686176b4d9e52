"""``bcolz-store info`` and ``bcolz-store verify``: describe a dataset, check its files."""

from __future__ import annotations

import json
import os

import bcolz_store
from bcolz_store.errors import BcolzStoreError

from .common import (EXIT_FAILURE, EXIT_OK, EXIT_UNVERIFIED, CommandError, describe,
                     fmt_ratio, ratio, storage_options)

__all__ = ["dataset_info", "format_info", "format_verify", "verify_dataset"]


# --- info ---------------------------------------------------------------------

def _cparams_dict(cp) -> dict:
    return {"clevel": int(cp.clevel), "shuffle": int(cp.shuffle),
            "cname": str(cp.cname), "quantize": int(getattr(cp, "quantize", 0))}




def _carray_facts(ca) -> dict:
    """Facts about one carray (a dataset or a ctable column) as plain JSON values."""
    length = int(ca.shape[0]) if len(ca.shape) else 0
    chunklen, nchunks = int(ca.chunklen), int(ca.nchunks)
    nbytes, cbytes = int(ca.nbytes), int(ca.cbytes)
    vlen = getattr(ca, "vlen", None)
    extra = {} if vlen is None else {"vlen": {
        "kind": vlen.kind, "codec": "zstd", "level": vlen.level, "nullable": bool(vlen.nullable),
        "dictionary_bytes": len(vlen.dictionary) if vlen.dictionary else 0}}
    return {
        **extra,
        "shape": [int(n) for n in ca.shape],
        "dtype": str(ca.dtype),
        "chunklen": chunklen,
        "nchunks": nchunks,
        "leftover": length - nchunks * chunklen,
        "cparams": _cparams_dict(ca.cparams),
        "nbytes": nbytes,
        "cbytes": cbytes,
        "cratio": ratio(nbytes, cbytes),
        "attrs": ca.attrs.getall(),
    }


def _shared(columns: list, key: str):
    """The value of ``key`` when every column has the same one, else None."""
    values = [col[key] for col in columns]
    return values[0] if values and all(v == values[0] for v in values) else None


def _ctable_facts(ct) -> dict:
    columns = [{"name": name, **_carray_facts(ct.cols[name])} for name in ct.names]
    nbytes = sum(col["nbytes"] for col in columns)
    cbytes = sum(col["cbytes"] for col in columns)
    return {
        "shape": [int(len(ct))],
        "dtype": str(ct.dtype),
        "chunklen": _shared(columns, "chunklen"),
        "nchunks": _shared(columns, "nchunks"),
        "cparams": _shared(columns, "cparams"),
        "nbytes": nbytes,
        "cbytes": cbytes,
        "cratio": ratio(nbytes, cbytes),
        "attrs": ct.attrs.getall(),
        "names": list(ct.names),
        "columns": columns,
    }


def _exists(path: str, options) -> bool:
    """Whether anything is at ``path`` (a local path, or a URL through fsspec)."""
    from bcolz_store.storage.urls import is_url, open_store
    if not is_url(path):
        return os.path.exists(path)
    try:
        return open_store(path, True, options).root_state() != "missing"
    except (ImportError, ValueError) as err:
        raise CommandError(f"{path}: {err}") from err


def dataset_info(path, storage_options=None) -> dict:
    """Describe the bcolz dataset at ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        A carray or ctable rootdir, a URL (``s3://...``) or a ``.zip`` pack.
        It is opened read-only.
    storage_options : dict, optional
        fsspec options for a URL.

    Returns
    -------
    dict
        JSON-serialisable facts: ``path``, ``kind`` ('carray' or 'ctable'),
        ``shape``, ``dtype`` (``str(dtype)``), ``chunklen``, ``nchunks``
        (full chunks), ``cparams`` (dict), ``nbytes``, ``cbytes`` (bytes),
        ``cratio`` (float, None when cbytes is 0) and ``attrs``.  A carray also
        has ``leftover`` (items after the last full chunk); a ctable has
        ``names`` and ``columns``, a list with these facts per column, and
        holds ``chunklen``/``nchunks``/``cparams`` only when every column
        agrees on them (None otherwise).

    Raises
    ------
    CommandError
        When nothing exists at ``path``, or ``bcolz_store.open`` refuses it
        (not a dataset, corrupt, unreadable); the message names the path.
    """
    path = os.fspath(path)
    if not _exists(path, storage_options):
        raise CommandError(f"{path}: no such file or directory")
    try:
        obj = bcolz_store.open(path, mode="r", storage_options=storage_options)
        if isinstance(obj, bcolz_store.ctable):
            facts = {"path": path, "kind": "ctable", **_ctable_facts(obj)}
        else:
            facts = {"path": path, "kind": "carray", **_carray_facts(obj)}
    except (BcolzStoreError, OSError) as err:
        raise CommandError(describe(err, path, "not a readable bcolz dataset")) from err
    return facts


def _human(nbytes: int) -> str:
    size = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.2f} {unit}"
        size /= 1024
    return f"{nbytes} B"  # pragma: no cover - the loop always returns


def _fmt_cparams(cp: dict | None, vlen: dict | None = None) -> str:
    if vlen is not None:        # items of any length: zstd chunks, not Blosc
        return " ".join(f"{k}={vlen[k]}" for k in ("kind", "codec", "level", "nullable",
                                                    "dictionary_bytes"))
    if cp is None:
        return "(differs by column)"
    return " ".join(f"{k}={cp[k]}" for k in ("cname", "clevel", "shuffle", "quantize"))




def format_info(facts: dict) -> str:
    """Render :func:`dataset_info`'s result as aligned text lines.

    Returns
    -------
    str
        One ``key: value`` line per fact, then a column table for a ctable.
    """
    def varies(value):
        return "(differs by column)" if value is None else value

    lines = [
        ("path", facts["path"]),
        ("kind", facts["kind"]),
        ("shape", tuple(facts["shape"])),
        ("dtype", facts["dtype"]),
        ("chunklen", varies(facts["chunklen"])),
        ("nchunks", varies(facts["nchunks"])),
    ]
    if "leftover" in facts:
        lines.append(("leftover", facts["leftover"]))
    lines += [
        ("vlen" if "vlen" in facts else "cparams",
         _fmt_cparams(facts["cparams"], facts.get("vlen"))),
        ("nbytes", f"{facts['nbytes']} ({_human(facts['nbytes'])})"),
        ("cbytes", f"{facts['cbytes']} ({_human(facts['cbytes'])})"),
        ("cratio", fmt_ratio(facts["cratio"])),
        ("attrs", json.dumps(facts["attrs"], sort_keys=True)),
    ]
    out = [f"{key + ':':<10} {value}" for key, value in lines]
    if facts["kind"] == "ctable":
        out.append(f"columns:   {len(facts['columns'])}")
        out.extend(_column_table(facts["columns"]))
    return "\n".join(out)


def _column_table(columns: list) -> list:
    head = ("name", "dtype", "shape", "chunklen", "nchunks", "cparams",
            "nbytes", "cbytes", "cratio", "attrs")
    rows = [head] + [
        (c["name"], c["dtype"], str(tuple(c["shape"])), str(c["chunklen"]), str(c["nchunks"]),
         _fmt_cparams(c["cparams"], c.get("vlen")), str(c["nbytes"]), str(c["cbytes"]),
         fmt_ratio(c["cratio"]), json.dumps(c["attrs"], sort_keys=True))
        for c in columns]
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
            for row in rows]


def cmd_info(args) -> int:
    facts = dataset_info(args.path, storage_options(args))
    if args.json:
        print(json.dumps(facts, indent=2))
    else:
        print(format_info(facts))
    return EXIT_OK


# --- verify -------------------------------------------------------------------

PROBLEM_KINDS = ("missing", "extra", "damaged")


def verify_dataset(path, storage_options=None) -> dict:
    """Check the files of the dataset at ``path`` against its checksum file.

    Parameters
    ----------
    path : str or os.PathLike
        A carray or ctable rootdir, a URL or a ``.zip`` pack.  Nothing is
        written to it.
    storage_options : dict, optional
        fsspec options for a URL.

    Returns
    -------
    dict
        ``path``, ``ok`` (bool) and the sorted lists ``missing`` (listed in
        ``bcolz_store.md5`` but absent), ``extra`` (present but not listed)
        and ``damaged`` (content differs from its md5), as paths relative to
        the rootdir.

    Raises
    ------
    CommandError
        When nothing exists at ``path`` or it cannot be checked (not a
        dataset, unreadable checksum file); the message names the path.
    """
    path = os.fspath(path)
    if not _exists(path, storage_options):
        raise CommandError(f"{path}: no such file or directory")
    check = getattr(bcolz_store, "verify", None)
    if check is None:
        raise CommandError("this version of bcolz_store cannot verify checksums")
    try:
        report = check(path, storage_options=storage_options) if storage_options else \
            check(path)
    except (BcolzStoreError, OSError) as err:
        raise CommandError(describe(err, path, "cannot verify")) from err
    facts = {"path": path, "ok": bool(report.ok),
             "no_checksums": bool(getattr(report, "no_checksums", False))}
    for kind in PROBLEM_KINDS:
        facts[kind] = sorted(str(p) for p in getattr(report, kind))
    facts["reasons"] = {str(k): v for k, v in sorted(getattr(report, "reasons", {}).items())}
    return facts


def format_verify(facts: dict) -> str:
    """Render :func:`verify_dataset`'s result: one ``KIND  PATH`` line per problem, then a summary."""
    reasons = facts.get("reasons", {})
    plain = "content does not match its md5"
    lines = [f"{kind:<8}{rel}" + (f"  ({reasons[rel]})" if kind == "damaged" and
                                   reasons.get(rel, plain) != plain else "")
             for kind in PROBLEM_KINDS for rel in facts[kind]]
    if facts.get("no_checksums"):
        lines.append(f"{facts['path']}: not verified: the dataset has no checksum file "
                     f"(bcolz wrote it, or bcolz_store has not committed to it yet)")
    elif facts["ok"]:
        lines.append(f"{facts['path']}: ok")
    else:
        counts = ", ".join(f"{len(facts[k])} {k}" for k in PROBLEM_KINDS if facts[k])
        total = sum(len(facts[k]) for k in PROBLEM_KINDS)
        noun = "problem" if total == 1 else "problems"
        lines.append(f"{facts['path']}: {total} {noun} ({counts})" if total
                     else f"{facts['path']}: not ok")
    return "\n".join(lines)


def cmd_verify(args) -> int:
    facts = verify_dataset(args.path, storage_options(args))
    if args.json:
        print(json.dumps(facts, indent=2))
    else:
        print(format_verify(facts))
    if facts.get("no_checksums"):
        return EXIT_UNVERIFIED
    return EXIT_OK if facts["ok"] else EXIT_FAILURE


