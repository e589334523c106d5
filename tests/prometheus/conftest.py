"""Fixtures of the Prometheus tests: the directory with promtool and prometheus."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.prometheus.tools import prometheus_bin_dir


@pytest.fixture(scope="session")
def prometheus_bin() -> Path:
    return prometheus_bin_dir()
