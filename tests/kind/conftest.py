"""The session's Kind cluster: kind/up.sh before the first test that needs it,
kind/down.sh after the last one - always, even when bringing it up failed."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.kind.cluster import KindCluster, kind_down, kind_up


@pytest.fixture(scope="session")
def kind(pytestconfig: pytest.Config) -> Iterator[KindCluster]:
    """A running Kind cluster with the project image loaded. The scripts' progress lines
    are shown live (pytest's capture is suspended while they run)."""
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    try:
        with capture.global_and_fixture_disabled():
            cluster = kind_up(progress=sys.stderr)
        yield cluster
    finally:
        with capture.global_and_fixture_disabled():
            kind_down(progress=sys.stderr)
