"""Entry point: ``python -m benchmarks --help``."""

import sys

from .harness import main

sys.exit(main())
