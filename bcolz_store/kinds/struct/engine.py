"""The engine of a struct carray: one engine per field (each over its own
sub-folder, ``store.sub(folder)``), plus a bool engine of validity when
items may be missing; dict items in between.

Reads read every field's range and zip them into dicts (``{field: value}``,
None for a missing struct), as pyarrow's ``to_pylist`` does.  Writes split
dicts into one list per field, convert every field before anything changes,
then write each field (and the validity): one ``flush()`` commits them all,
as the fields share the carray's dataset.

Every field and the validity is a row part (:mod:`bcolz_store.chunks.parts`),
the first field the primary one: the carray's length and chunks are its;
its sizes are the sums of every part's.

Layout: kinds/struct/meta.py.
"""

from __future__ import annotations

import numpy as np

from ...items import masked_to_objects
from ..vlen.engine import VlenEngine
from ..vlen.chunk_items import as_items
from ...chunks.engine import ChunkEngine
from ...chunks.parts import PartsEngine, part_nbytes

__all__ = ["StructEngine"]


def _python_items(values) -> list:
    """A field's read values as Python items (None for a masked item)."""
    if isinstance(values, np.ma.MaskedArray):
        return masked_to_objects(values).tolist()
    return values.tolist()


class StructEngine(PartsEngine):
    """The fields of one struct carray, read and written as dicts.

    Parameters
    ----------
    fields : list of (name, engine, fill)
        Each field's name, engine and the item a missing struct stores in it.
    validity : ChunkEngine or None
        Bools, True where the item is present (None: every item is).
    stage_field : callable or None
        ``stage_field(name, engine, nbytes)``: stage a field's ``meta/sizes`` (and
        statistics) for the next commit.
    where : str
        What errors name.
    chunklen : int, optional
        Items per chunk of every field (default the first field's).
    """

    def __init__(self, fields, validity, stage_field=None, where: str = "struct carray",
                 chunklen: int | None = None):
        fields = list(fields)
        self.names = [f[0] for f in fields]
        self._fills = [f[2] for f in fields]
        # the fields are the parts named by the fields' names, the validity
        # the part named None (as stage_field names it)
        parts = {name: engine for name, engine, _ in fields}
        parts[None] = validity
        self._init_parts(parts, rows=list(parts), sized=list(parts), chunklen=chunklen)
        self.atom = getattr(fields[0][1], "atom", None)
        self.stage_field = stage_field
        self.where = where

    stats = None        # no chunk statistics for a struct carray itself

    @property
    def fields(self) -> list:
        """``(name, engine, fill)`` of each field."""
        return [(name, self.parts[name], fill) for name, fill in zip(self.names, self._fills)]

    @property
    def validity(self):
        """The engine of the validity (bools, True where the item is
        present), or None when every item is."""
        return self.parts.get(None)

    def field_engine(self, name):
        """The engine of field ``name``."""
        for fname, engine, _ in self.fields:
            if fname == name:
                return engine
        raise KeyError(f"{self.where}: no field named {name!r}; fields are {self.names}")

    # ------------------------------------------------------------ conversions

    def items_of(self, parts, valid) -> np.ndarray:
        """The dicts of the fields' values ``parts`` (None where not ``valid``)."""
        columns = [_python_items(p) for p in parts]
        n = len(columns[0]) if columns else 0
        out = np.empty(n, dtype=object)
        names = self.names
        present = valid.tolist() if valid is not None else None
        for i, row in enumerate(zip(*columns)):
            out[i] = dict(zip(names, row)) if present is None or present[i] else None
        return out

    def split(self, items) -> tuple:
        """``(values per field, validity)`` of dict items, converted for each
        field's engine, checked before anything changes.

        Raises
        ------
        TypeError
            An item that is not a dict (or None).
        ValueError
            A dict whose keys are not the fields', None where the struct
            holds no missing items, or a field value its field refuses
            (naming the field).
        """
        items = items.reshape(-1).tolist() if isinstance(items, np.ndarray) else list(items)
        valid = np.ones(len(items), dtype=bool)
        names, wanted = self.names, set(self.names)
        lists = [[] for _ in names]
        for i, item in enumerate(items):
            if item is None:
                if self.validity is None:
                    raise ValueError(f"{self.where}: item {i} is None, and this struct carray "
                                     f"holds no missing items")
                valid[i] = False
                for values, (_, _, fill) in zip(lists, self.fields):
                    values.append(fill)
                continue
            if not isinstance(item, dict):
                raise TypeError(f"{self.where}: item {i} is {type(item).__name__}, not a dict "
                                f"of the fields {names}")
            if item.keys() != wanted:
                extra = sorted(map(repr, set(item) - wanted))
                lacking = sorted(map(repr, wanted - set(item)))
                raise ValueError(f"{self.where}: item {i} has keys {list(item)!r:.200}; the "
                                 f"fields are {names}"
                                 + (f" (missing {', '.join(lacking)})" if lacking else "")
                                 + (f" (unknown {', '.join(extra)})" if extra else ""))
            for values, name in zip(lists, names):
                values.append(item[name])
        parts = [self._convert(name, engine, values)
                 for (name, engine, _), values in zip(self.fields, lists)]
        return parts, valid

    def convert_field(self, name, engine, values):
        """``values`` (a list or object array of items) converted for field
        ``name``'s ``engine`` to append, checked.

        Raises
        ------
        TypeError, ValueError
            Items the field refuses (the message names the field).
        """
        return self._convert(name, engine, values)

    def _convert(self, name, engine, values):
        where = f"{self.where}: field {name!r}"
        try:
            if isinstance(engine, VlenEngine):
                vlen = engine.vlen
                atom = engine.atom if hasattr(engine, "atom") else None
                return as_items(values, vlen.kind, atom, vlen.nullable, where=where)
            if isinstance(engine, ChunkEngine):
                if any(v is None for v in values):
                    pos = next(i for i, v in enumerate(values) if v is None)
                    raise ValueError(f"item {pos} is None, and the field holds no missing "
                                     f"items")
                return np.asarray(values, dtype=engine.atom).reshape(-1)
            items = np.fromiter(values, dtype=object, count=len(values))
            prepare = getattr(engine, "prepare", None)
            return prepare(items) if prepare is not None else items
        except (TypeError, ValueError, OverflowError) as err:
            message = str(err)
            if not message.startswith(self.where):
                message = f"{where}: {message}"
            raise type(err)(message) if not isinstance(err, OverflowError) else \
                ValueError(message) from None

    # ------------------------------------------------------------ engine protocol

    def _read(self, how) -> np.ndarray:
        parts = [how(engine) for _, engine, _ in self.fields]
        valid = how(self.validity) if self.validity is not None else None
        return self.items_of(parts, valid)

    def chunk_array(self, nchunk: int) -> np.ndarray:
        return self._read(lambda e: e.chunk_array(nchunk))

    def read_range(self, start: int, stop: int) -> np.ndarray:
        return self._read(lambda e: e.read_range(start, stop))

    def gather(self, idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)       # (of any shape: the items take it)
        flat = idx.reshape(-1)
        return self._read(lambda e: e.gather(flat)).reshape(idx.shape)

    def prepare(self, items):
        """Items split and converted (see :meth:`split`)."""
        if isinstance(items, _Prepared):
            return items
        return _Prepared(*self.split(items))

    def _each(self, items, write) -> None:
        prepared = self.prepare(items)
        for (_, engine, _), part in zip(self.fields, prepared.parts):
            write(engine, part)
        if self.validity is not None:
            write(self.validity, prepared.valid)

    def append(self, items) -> None:
        self._each(items, lambda engine, part: engine.append(part))

    def set_slice(self, start: int, stop: int, step: int, items) -> None:
        self._each(items, lambda engine, part: engine.set_slice(start, stop, step, part))

    def set_positions(self, idx: np.ndarray, items) -> None:
        self._each(items, lambda engine, part: engine.set_positions(idx, part))

    def _staged(self, name, engine) -> None:
        """Stage field ``name``'s ``meta/sizes`` (and statistics; None: the validity's)."""
        if self.stage_field is not None:
            self.stage_field(name, engine, part_nbytes(engine))


class _Prepared:
    """Struct items split into the fields' converted values and the validity."""

    __slots__ = ("parts", "valid")

    def __init__(self, parts, valid):
        self.parts = parts
        self.valid = valid

    def __len__(self) -> int:
        return len(self.valid)
