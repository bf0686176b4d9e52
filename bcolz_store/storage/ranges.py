"""Byte ranges of one object: checking them, and grouping nearby ones.

A range is ``(start, stop)``, the bytes ``[start, stop)`` of an object, as
:meth:`~.base.Store.get_range` and :meth:`~.base.Store.get_ranges` take it.
A store whose every request costs a round trip (an object store) fetches
ranges that lie close together as one request: :func:`coalesce` groups them,
:func:`split_groups` cuts each range back out of what its group fetched.
"""

from __future__ import annotations

import numbers

__all__ = ["MAX_GAP", "check_range", "check_ranges", "coalesce", "split_groups"]

#: Ranges of one object separated by fewer bytes than this are fetched in one
#: request (the bytes between them cost less than another round trip).
MAX_GAP = 64 << 10


def check_range(start, stop) -> tuple:
    """``(start, stop)`` as Python ints, checked.

    Parameters
    ----------
    start, stop : int
        The bytes ``[start, stop)``; any integer type (NumPy's too), not a bool.

    Returns
    -------
    (int, int)

    Raises
    ------
    ValueError
        When either is not an integer, is negative, or ``stop < start``.
    """
    if type(start) is int and type(stop) is int and 0 <= start <= stop:
        return start, stop                   # the common case, checked cheaply
    for name, value in (("start", start), ("stop", stop)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"a byte range's {name} must be an integer, not {value!r:.50}")
    start, stop = int(start), int(stop)
    if start < 0 or stop < start:
        raise ValueError(f"byte range [{start}, {stop}): expected 0 <= start <= stop")
    return start, stop


def check_ranges(ranges) -> list:
    """``ranges`` (an iterable of ``(start, stop)`` pairs) as a list of checked
    pairs.

    Parameters
    ----------
    ranges : iterable of (int, int)

    Returns
    -------
    list of (int, int)

    Raises
    ------
    ValueError
        When ``ranges`` is not an iterable of pairs, or a pair is not a valid
        range (see :func:`check_range`).
    """
    if isinstance(ranges, (str, bytes)):
        raise ValueError(f"expected (start, stop) pairs, not {ranges!r:.50}")
    try:
        pairs = list(ranges)
    except TypeError as err:
        raise ValueError(f"expected (start, stop) pairs, not {ranges!r:.50}") from err
    out = []
    for pair in pairs:
        if type(pair) is tuple and len(pair) == 2 and type(pair[0]) is int \
                and type(pair[1]) is int and 0 <= pair[0] <= pair[1]:
            out.append(pair)
            continue
        try:
            start, stop = pair
        except (TypeError, ValueError) as err:
            raise ValueError(f"expected a (start, stop) pair, not {pair!r:.50}") from err
        out.append(check_range(start, stop))
    return out


def coalesce(ranges: list, max_gap: int = MAX_GAP) -> list:
    """Group checked ranges that overlap or lie less than ``max_gap`` bytes apart.

    An empty range ``[s, s)`` counts as ``[s, s + 1)``, so that each group
    asks for at least one byte (a request for no byte is no valid request,
    and it still tells whether the object exists).

    Parameters
    ----------
    ranges : list of (int, int)
        Checked ranges (see :func:`check_ranges`), in any order.
    max_gap : int, default MAX_GAP
        Ranges closer than this go in one group.

    Returns
    -------
    list of (int, int)
        The groups' ``(start, stop)``, sorted and disjoint; each range lies
        inside one of them.
    """
    groups = []
    for start, stop in sorted((s, max(e, s + 1)) for s, e in ranges):
        if groups and start - groups[-1][1] < max_gap:
            groups[-1][1] = max(groups[-1][1], stop)
        else:
            groups.append([start, stop])
    return [(start, stop) for start, stop in groups]


def split_groups(ranges: list, groups: list, fetched: list) -> list:
    """The bytes of each range, cut out of what its group fetched.

    Parameters
    ----------
    ranges : list of (int, int)
        The ranges asked for.
    groups : list of (int, int)
        :func:`coalesce` of ``ranges``.
    fetched : list of bytes
        The bytes of each group (fewer than asked where the object ends).

    Returns
    -------
    list of bytes
        One per range, in the order of ``ranges``.
    """
    import bisect
    starts = [start for start, _stop in groups]
    out = []
    for start, stop in ranges:
        i = bisect.bisect_right(starts, start) - 1
        offset = start - groups[i][0]
        out.append(bytes(fetched[i][offset:offset + stop - start]))
    return out
