"""Errors of the scheduler loop's cluster edge (pure: no client imports), so a simulated
cluster can raise the same ones."""

from __future__ import annotations


class ClusterError(Exception):
    """An API call failed; the message says which and why."""


class NotFound(ClusterError):
    """The object (a pod, or the NRT CRD) does not exist (HTTP 404)."""


class Conflict(ClusterError):
    """The object changed or is already bound (HTTP 409)."""
