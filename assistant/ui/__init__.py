"""The Qt desktop UI: widgets, dialogs and the bridge from the agent's worker thread.

This package (and :mod:`assistant.app`) is the only place that imports PySide6. Widgets
render plain data (:mod:`assistant.conversation`, :mod:`assistant.agent.events`) and send
intents; they never call the model directly and never wait on it.
"""
