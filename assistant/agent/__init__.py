"""The turn loop: user input -> context check -> model -> tool calls -> ..."""
