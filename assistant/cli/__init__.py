"""Terminal front ends: the chat REPL and the packaged app's smoke test."""
