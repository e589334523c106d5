"""Bundled example profiles and pods (package data, read with importlib.resources)."""
