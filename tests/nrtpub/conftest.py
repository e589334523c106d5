"""The controller tests' fixtures, shared: a JSON client on the real API server and a
manual clock."""

from tests.controller.conftest import clock, kube

__all__ = ["clock", "kube"]
