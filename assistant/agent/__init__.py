"""The turn loop: user input -> context check -> model -> tool calls -> ...

Entry points: :class:`~assistant.agent.loop.Agent` (run turns and tool commands) and
:func:`~assistant.agent.commands.parse_input` (what the user typed). Events are in
:mod:`assistant.agent.events`.
"""
