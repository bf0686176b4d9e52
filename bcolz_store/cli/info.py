"""``bcolz-store info`` and ``bcolz-store verify``: describe a dataset, check its files."""

from __future__ import annotations

import base64
import binascii
import json
import os

import bcolz_store
from bcolz_store.errors import BcolzStoreError

from .common import (EXIT_CHANGED, EXIT_FAILURE, EXIT_OK, EXIT_UNVERIFIED, PROG, CommandError,
                     Progress, describe, fmt_ratio, ratio, remote_reason, storage_options)

__all__ = ["dataset_info", "format_info", "format_verify", "verify_dataset"]


# --- info ---------------------------------------------------------------------

# Names whose presence makes a folder (or a URL, or a pack) a bcolz dataset:
# meta/sizes of a carray, __rootdirs__ of a ctable, and bcolz_store's own files.
DATASET_NAMES = ("meta/sizes", "__rootdirs__", "bcolz_store.json", "bcolz_store.md5")
# Categories shown by `info`: the first ones in JSON, fewer (and each cut) in text.
JSON_CATEGORIES, TEXT_CATEGORIES, TEXT_CATEGORY_CHARS = 100, 6, 20


def _cparams_dict(cp) -> dict:
    return {"clevel": int(cp.clevel), "shuffle": int(cp.shuffle),
            "cname": str(cp.cname), "quantize": int(getattr(cp, "quantize", 0))}


def _json_category(value):
    return value if isinstance(value, str) else value.decode("ascii", "backslashreplace")


def _category_facts(ca, category) -> dict:
    categories = list(category.categories or [])
    return {"kind": category.kind, "ordered": bool(category.ordered),
            "codes": str(ca.codes[:0].dtype), "ncategories": len(categories),
            "categories": [_json_category(c) for c in categories[:JSON_CATEGORIES]]}


def _carray_facts(ca) -> dict:
    """Facts about one carray (a dataset or a ctable column) as plain JSON values."""
    length = int(ca.shape[0]) if len(ca.shape) else 0
    chunklen, nchunks = int(ca.chunklen), int(ca.nchunks)
    nbytes, cbytes = int(ca.nbytes), int(ca.cbytes)
    vlen = getattr(ca, "vlen", None)
    category = getattr(ca, "category", None)
    if category is not None:
        extra = {"category": _category_facts(ca, category)}
    elif vlen is not None:
        extra = {"vlen": {
            "kind": vlen.kind, "codec": "zstd", "level": vlen.level,
            "nullable": bool(vlen.nullable),
            "dictionary_bytes": len(vlen.dictionary) if vlen.dictionary else 0}}
    else:
        extra = {}
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


def _remote_failure(err: Exception, path: str):
    """``err`` as a CommandError when it says why a URL cannot be read, else None."""
    reason = remote_reason(err, path)
    return None if reason is None else CommandError(reason)


def _store(path: str, options):
    """The store of a URL, or None for a local path."""
    from bcolz_store.storage.urls import is_url, open_store
    if not is_url(path) or path.startswith("file://"):
        return None
    try:
        return open_store(path, True, options)
    except (ImportError, ValueError) as err:
        raise CommandError(f"{path}: {err}") from err


def _exists(path: str, options) -> bool:
    """Whether anything is at ``path`` (a local path, or a URL through fsspec)."""
    store = _store(path, options)
    if store is None:
        return os.path.exists(path[len("file://"):] if path.startswith("file://") else path)
    try:
        return store.root_state() != "missing"
    except Exception as err:        # noqa: BLE001 - remote failures, told by remote_reason
        failure = _remote_failure(err, path)
        if failure is None:
            raise
        raise failure from err


def _command_error(err: Exception, path: str, what: str):
    """The one-line CommandError for ``err`` raised while reading ``path``, or
    None for an error of another kind (a bug: let it show)."""
    failure = _remote_failure(err, path)
    if failure is not None:
        return failure
    if not isinstance(err, (BcolzStoreError, OSError)):
        return None
    return CommandError(describe(err, path, what))


def _check_dataset(path: str, options) -> None:
    """CommandError unless ``path`` holds a bcolz dataset: nothing there, a file
    that is not a ``.zip`` pack, a folder (or URL) without a dataset's files."""
    if not _exists(path, options):
        raise CommandError(f"{path}: no such file or directory")
    store = _store(path, options)
    local = path[len("file://"):] if path.startswith("file://") else path
    if store is None and os.path.isfile(local):
        if local.lower().endswith(".zip"):
            return                  # a pack: opening it checks it
        raise CommandError(f"{path}: not a bcolz dataset: it is a file (a dataset is a "
                           f"folder, a URL or a .zip pack made by bcolz-store pack)")
    if store is None:
        found = any(os.path.isfile(os.path.join(local, name)) for name in DATASET_NAMES)
    else:
        try:
            found = any(store.exists(name) for name in DATASET_NAMES)
        except Exception as err:    # noqa: BLE001 - remote failures, told by remote_reason
            failure = _remote_failure(err, path)
            if failure is None:
                raise
            raise failure from err
    if not found:
        raise CommandError(f"{path}: not a bcolz dataset (no meta/sizes, __rootdirs__ or "
                           f"bcolz_store.json in it)")


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
        When nothing exists at ``path``, it is not a bcolz dataset (a file
        other than a pack, a folder without a dataset's files), a URL cannot
        be reached (no credentials, no such bucket, access denied), or
        ``bcolz_store.open`` refuses it (corrupt, unreadable); the message
        names the path and says why in one line.
    """
    path = os.fspath(path)
    _check_dataset(path, storage_options)
    try:
        obj = bcolz_store.open(path, mode="r", storage_options=storage_options)
        if isinstance(obj, bcolz_store.ctable):
            facts = {"path": path, "kind": "ctable", **_ctable_facts(obj)}
        else:
            facts = {"path": path, "kind": "carray", **_carray_facts(obj)}
    except CommandError:
        raise
    except Exception as err:        # noqa: BLE001 - the known kinds, else a bug
        failure = _command_error(err, path, "not a readable bcolz dataset")
        if failure is None:
            raise
        raise failure from err
    return facts


def _human(nbytes: int) -> str:
    size = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.2f} {unit}"
        size /= 1024
    return f"{nbytes} B"  # pragma: no cover - the loop always returns


def _short(value: str) -> str:
    text = repr(value)
    return text if len(text) <= TEXT_CATEGORY_CHARS else text[:TEXT_CATEGORY_CHARS - 3] + "..."


def _fmt_category(cat: dict) -> str:
    shown = ", ".join(_short(c) for c in cat["categories"][:TEXT_CATEGORIES])
    more = cat["ncategories"] - min(cat["ncategories"], TEXT_CATEGORIES)
    if more:
        shown += f", ... {more} more"
    return (f"categorical {cat['kind']} codes={cat['codes']} ordered={cat['ordered']} "
            f"categories={cat['ncategories']} [{shown}]")


def _fmt_cparams(cp: dict | None, vlen: dict | None = None, category: dict | None = None) -> str:
    if category is not None:    # codes plus categories
        return _fmt_category(category)
    if vlen is not None:        # items of any length: zstd chunks, not Blosc
        return " ".join(f"{k}={vlen[k]}" for k in ("kind", "codec", "level", "nullable",
                                                    "dictionary_bytes"))
    if cp is None:
        return "(differs by column)"
    return " ".join(f"{k}={cp[k]}" for k in ("cname", "clevel", "shuffle", "quantize"))




# Attrs under this prefix are the library's own records (an Arrow field, a
# pandas dtype...): shown decoded or summarised in text, exact in JSON.
INTERNAL_PREFIX = "bcolz_store."
# The longest text of an internal attr shown as it is.
INTERNAL_TEXT_CHARS = 80


def _arrow_field_text(text: str):
    """An Arrow field recorded as base64 of an IPC schema, as words (None
    when ``text`` is not one, or pyarrow is not installed)."""
    try:
        import pyarrow as pa
    except ImportError:
        return None
    try:
        schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text, validate=True)))
    except (binascii.Error, ValueError, pa.ArrowException):
        return None
    if len(schema) != 1:
        return None
    field = schema.field(0)
    words = str(field.type) + ("" if field.nullable else " not null")
    if field.metadata:
        meta = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
                for k, v in field.metadata.items()}
        words += f", metadata {meta}"
    return f"(Arrow field: {words})"


def _readable_attr(value):
    """An internal attr's value as text shows it: a recorded Arrow field
    decoded, other long text summarised by its length."""
    if isinstance(value, str):
        field = _arrow_field_text(value)
        if field is not None:
            return field
        if len(value) > INTERNAL_TEXT_CHARS:
            return f"({len(value)} characters)"
    return value


def _fmt_attrs(attrs: dict) -> str:
    """``attrs`` as one line of JSON, the library's own attrs made readable."""
    shown = {key: _readable_attr(value) if key.startswith(INTERNAL_PREFIX) else value
             for key, value in attrs.items()}
    return json.dumps(shown, sort_keys=True)


def format_info(facts: dict) -> str:
    """Render :func:`dataset_info`'s result as aligned text lines.

    Attrs of the library's own (``bcolz_store.*``) are shown readably: an
    Arrow field recorded as base64 as its type (``(Arrow field:
    large_string)``), other long text as its length; the JSON of
    :func:`dataset_info` keeps them exactly.

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
        ("category" if "category" in facts else "vlen" if "vlen" in facts else "cparams",
         _fmt_cparams(facts["cparams"], facts.get("vlen"), facts.get("category"))),
        ("nbytes", f"{facts['nbytes']} ({_human(facts['nbytes'])})"),
        ("cbytes", f"{facts['cbytes']} ({_human(facts['cbytes'])})"),
        ("cratio", fmt_ratio(facts["cratio"])),
        ("attrs", _fmt_attrs(facts["attrs"])),
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
         _fmt_cparams(c["cparams"], c.get("vlen"), c.get("category")), str(c["nbytes"]),
         str(c["cbytes"]),
         fmt_ratio(c["cratio"]), _fmt_attrs(c["attrs"]))
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
# Files another program changed consistently (not damage), and those accepted.
CHANGE_KINDS = ("changed", "resealed")


def verify_dataset(path, storage_options=None, reseal: bool = False, progress=None) -> dict:
    """Check the files of the dataset at ``path`` against its checksum file.

    Parameters
    ----------
    path : str or os.PathLike
        A carray or ctable rootdir, a URL or a ``.zip`` pack.  Nothing is
        written to it.
    storage_options : dict, optional
        fsspec options for a URL.
    reseal : bool, default False
        Accept files another program changed consistently (see
        :func:`bcolz_store.verify`): their checksums are committed.
    progress : callable, optional
        ``progress(step, done, total)``, passed to :func:`bcolz_store.verify`.

    Returns
    -------
    dict
        ``path``, ``ok`` (bool) and the sorted lists ``missing`` (listed in
        ``bcolz_store.md5`` but absent), ``extra`` (present but not listed),
        ``damaged`` (content differs from its md5), ``changed`` (changed by
        another program, consistently: not damage) and ``resealed`` (changed
        files whose checksums ``reseal`` committed), as paths relative to
        the rootdir.

    Raises
    ------
    CommandError
        When nothing exists at ``path`` or it cannot be checked (not a
        bcolz dataset, a URL that cannot be reached, an unreadable checksum
        file); the message names the path.  A folder without a dataset's
        files is not a dataset (exit status 1), while a dataset without a
        checksum file is reported as ``no_checksums`` (exit status 3; a
        pack's entries that cannot be read are then still ``damaged``,
        exit status 1).
    """
    path = os.fspath(path)
    _check_dataset(path, storage_options)
    check = getattr(bcolz_store, "verify", None)
    if check is None:
        raise CommandError("this version of bcolz_store cannot verify checksums")
    try:
        kwargs = {"reseal": True} if reseal else {}
        if progress is not None:
            kwargs["progress"] = progress
        if storage_options:
            kwargs["storage_options"] = storage_options
        report = check(path, **kwargs)
    except Exception as err:        # noqa: BLE001 - the known kinds, else a bug
        failure = _command_error(err, path, "cannot verify")
        if failure is None:
            raise
        raise failure from err
    facts = {"path": path, "ok": bool(report.ok),
             "no_checksums": bool(getattr(report, "no_checksums", False))}
    for kind in PROBLEM_KINDS + CHANGE_KINDS:
        facts[kind] = sorted(str(p) for p in getattr(report, kind, ()))
    facts["reasons"] = {str(k): v for k, v in sorted(getattr(report, "reasons", {}).items())}
    return facts


def format_verify(facts: dict) -> str:
    """Render :func:`verify_dataset`'s result: one ``KIND  PATH`` line per problem, then a summary."""
    reasons = facts.get("reasons", {})
    plain = "content does not match its md5"
    lines = [f"{kind:<8}{rel}" + (f"  ({reasons[rel]})" if kind == "damaged" and
                                   reasons.get(rel, plain) != plain else "")
             for kind in PROBLEM_KINDS for rel in facts[kind]]
    lines += [f"{kind + ' ':<8}{rel}" for kind in CHANGE_KINDS for rel in facts.get(kind, ())]
    if facts.get("no_checksums"):
        damaged = len(facts["damaged"])
        lines.append(f"{facts['path']}: not verified: the dataset has no checksum file "
                     f"(bcolz wrote it, or bcolz_store has not committed to it yet)" +
                     (f"; {damaged} pack {'entry' if damaged == 1 else 'entries'} cannot be "
                      f"read" if damaged else ""))
    elif any(facts.get(k) for k in CHANGE_KINDS) and not any(facts[k] for k in PROBLEM_KINDS):
        lines.extend(_describe_changes(facts))
    elif facts["ok"]:
        lines.append(f"{facts['path']}: ok")
    else:
        counts = ", ".join(f"{len(facts[k])} {k}" for k in PROBLEM_KINDS if facts[k])
        total = sum(len(facts[k]) for k in PROBLEM_KINDS)
        noun = "problem" if total == 1 else "problems"
        lines.append(f"{facts['path']}: {total} {noun} ({counts})" if total
                     else f"{facts['path']}: not ok")
    return "\n".join(lines)


def _describe_changes(facts: dict) -> list:
    """The summary of a verification that found only files another program
    changed consistently (or resealed them): what changed, and how to accept it."""
    path, reasons = facts["path"], facts.get("reasons", {})
    if facts.get("resealed") and not facts.get("changed"):
        return [f"{path}: ok; resealed {len(facts['resealed'])} files another program "
                f"changed (their checksums, and the statistics and indexes of their "
                f"carrays, are committed)"]
    changed = facts["changed"]
    whys = sorted({f"{rel.rpartition('meta/sizes')[0] or './'}: {reasons[rel]}"
                   for rel in changed if rel.endswith("meta/sizes") and rel in reasons})
    return whys + [f"{path}: {len(changed)} files changed by another program (bcolz?) since "
                   f"bcolz_store's last commit; they decode and agree with meta/sizes, so "
                   f"nothing is damaged.  Accept the change with `{PROG} verify --reseal "
                   f"{path}` (or bcolz_store.verify(path, reseal=True)) before bcolz_store "
                   f"writes to it again"]


def cmd_verify(args) -> int:
    with Progress(args) as progress:
        facts = verify_dataset(args.path, storage_options(args), getattr(args, "reseal", False),
                               progress if progress.enabled else None)
    if args.json:
        print(json.dumps(facts, indent=2))
    else:
        print(format_verify(facts))
    if any(facts[kind] for kind in PROBLEM_KINDS):
        return EXIT_FAILURE
    if facts.get("no_checksums"):
        return EXIT_UNVERIFIED
    if facts.get("changed"):
        return EXIT_CHANGED
    return EXIT_OK if facts["ok"] else EXIT_FAILURE


