"""``python -m bcolz_store.cli``: the ``bcolz-store`` command."""

import sys

from . import main

sys.exit(main())
