"""Tools the model (and the user) can call, confined to the workspace folder."""
