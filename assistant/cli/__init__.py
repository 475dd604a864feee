"""The terminal face of the session service: ``chat`` and ``chats`` (Qt-free)."""
