"""Context management: token accounting, pruning, cut points, summaries (pure policy).

No Qt and no llama_cpp here: the model is reached only through ``assistant.llm.base``.
"""
