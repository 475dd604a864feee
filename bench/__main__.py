"""``python -m bench``: the benchmark (a development tool; not part of the app)."""

from __future__ import annotations

import sys

from bench.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
