"""Figures and reports built from run outputs (never from engine internals)."""
