"""Entry script for the frozen app: the same as ``python -m assistant``.

PyInstaller needs a script file; ``assistant/__main__.py`` cannot be that script itself
because it must run as part of the ``assistant`` package.
"""

from assistant.__main__ import main

if __name__ == "__main__":
    raise SystemExit(main())
