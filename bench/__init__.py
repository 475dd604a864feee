"""The context-management benchmark (``python -m bench``).

Modules, each small and separately testable:

* :mod:`.workloads` - deterministic workloads (W1-W4) with planted facts, saved as JSONL;
* :mod:`.strategies` - the five context strategies, all behind the agent's
  ``ContextManager`` protocol so they run through the same :class:`~assistant.agent.loop.Agent`;
* :mod:`.runner` - drives one workload with one strategy and records every model call;
* :mod:`.metrics` - turns the records into the reported numbers;
* :mod:`.micro` - the focused measurements (raw vs in-app speed, policy time, summary time);
* :mod:`.report` - markdown tables and PNG plots;
* :mod:`.cli` - the command line.
"""
