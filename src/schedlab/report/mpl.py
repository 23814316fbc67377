"""matplotlib as schedlab's figures use it, set up once: the Agg backend (files only, never a
display) and a fixed SVG hash salt (the same run gives the same bytes).

Importing this module imports matplotlib, so modules that draw import it when they draw: a
command that writes no figure never pays for matplotlib.
"""

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "schedlab"

import matplotlib.pyplot as plt  # noqa: E402 - after the backend is chosen

__all__ = ["plt"]
