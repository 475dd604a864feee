"""The session service: the Qt-free application core behind the window and the terminal
(:class:`~assistant.service.service.ChatService`); ``ui/`` adapts its events, ``cli/`` prints
them."""
