"""Fixtures of the scorecard's tests: an admin client of the suite's control plane."""

from __future__ import annotations

import pytest

from exporter.kubeclient import KubeClient
from tests.controller.conftest import admin_kube
from tests.controlplane.cluster import ControlPlane


@pytest.fixture
def kube(control_plane: ControlPlane) -> KubeClient:
    return admin_kube(control_plane.server, control_plane)
