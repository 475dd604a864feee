"""The turn loop: :class:`~assistant.agent.loop.Agent`, the input parser and the events."""
