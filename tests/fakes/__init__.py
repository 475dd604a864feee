"""Test doubles: a scripted backend with canned replies and the GBNF checker it uses.

They live outside the product package (the app and its bundle never load them); the
benchmark uses the scripted backend for its fast strategy runs."""
