"""One module per CLI sub-command; :mod:`schedlab.cli` only parses and dispatches."""
