"""The session service: the Qt-free application core behind the window and the terminal.

:class:`~assistant.service.service.ChatService` runs one chat at a time: the conversation's
lifecycle (new, open, resume, rename, delete, branches, export), the input queue, the app
commands (:mod:`.commands`), the model's lifecycle (load, reload on settings changes) and
saving, and it reports everything as events (:mod:`.events`), including one status
(:mod:`.status`) that every face renders. ``ui/`` adapts those events to Qt signals;
``cli/chat.py`` prints them.
"""
