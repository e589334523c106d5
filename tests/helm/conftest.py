"""Fixtures of the chart tests: helm (built once, cached) with a scratch home."""

from __future__ import annotations

import pytest

from tests.helm.tools import Helm, helm_path


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm(helm_path(), tmp_path_factory.mktemp("helm-home"))


# The manifest tests' kubectl and the CRDs and namespaces they install (the chart needs
# the same on the API server).
from tests.manifests.conftest import (  # noqa: E402, F401
    kubectl,
    kubectl_binary,
    manifest_namespaces,
    operator_crds,
)
