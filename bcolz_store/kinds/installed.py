"""The column kinds shipped with bcolz_store: importing this module registers them.

A new kind adds one line here (its folder's import).
"""

from __future__ import annotations

from . import category  # noqa: F401
from . import decimal  # noqa: F401
from . import fixed_binary  # noqa: F401
from . import list  # noqa: F401
from . import nullable  # noqa: F401
from . import struct  # noqa: F401
from . import vlen  # noqa: F401
