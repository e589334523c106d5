"""Example node profiles."""
