"""PyInstaller runtime hook: runs in the frozen app before ``assistant`` is imported.

The bundle carries its own llama.cpp build in ``llama_cpp/lib``. ``LLAMA_CPP_LIB_PATH`` in the
user's environment would make llama_cpp load some other (possibly incompatible) library
instead, so it is ignored in the frozen app.
"""

import os

os.environ.pop("LLAMA_CPP_LIB_PATH", None)
