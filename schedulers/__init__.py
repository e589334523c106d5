"""Schedulers under test: one adapter module per scheduler (docs/schedulers/README.md).

The interface is :mod:`schedulers.adapter`; :mod:`schedulers.registry` finds every module
here that defines ``ADAPTERS`` and picks adapters by name.
"""
