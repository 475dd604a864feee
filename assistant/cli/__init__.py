"""The terminal face of the session service: ``chat`` (the chat REPL) and ``chats`` (the
saved chats). Qt-free; the packaged app's smoke test lives in ``assistant/smoke.py``."""
