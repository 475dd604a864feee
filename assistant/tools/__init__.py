"""Tools the model (and the user) can call, confined to the workspace folder.

Each tool is a small module; :class:`~assistant.tools.registry.ToolRegistry` holds them,
gives their schemas to the model and runs calls safely. :mod:`assistant.tools.workspace`
is the sandbox every path goes through; :mod:`assistant.tools.approval` asks the user before
a model-initiated call changes anything.
"""
