"""Every chunk read here decodes block by block (tests/helpers/blocks.py)."""

from tests.helpers.blocks import read_by_blocks  # noqa: F401  (an autouse fixture)
