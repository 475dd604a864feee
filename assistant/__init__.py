"""Offline desktop assistant for small local language models.

Layers (dependencies point downwards only; ``tests/test_layers.py`` enforces it):

    ui/          PySide6 widgets (the only Qt user)
    app.py       composition root
    agent/       the turn loop
    tools/       workspace tools
    compaction/  token accounting, pruning, summaries (pure policy)
    sessions/    append-only chat storage
    llm/         backend protocol and llama-cpp-python (the only llama_cpp user)
    config.py, conversation.py, paths.py
"""

__version__ = "0.1.0"
