"""What a scheduler needs installed, on the real control plane: CRDs before the objects of
their kinds (discovery catching up), an object that exists left as it is, the per-deployment
objects deleted afterwards - any kind, through the dynamic client."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.controlplane.cluster import ControlPlane
from tests.e2e.schedulers import apply, delete, install

pytestmark = pytest.mark.controlplane


def _crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "scope": "Cluster",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


def _widget(group: str, name: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{group}/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": size},
    }


def test_crds_first_then_their_objects_and_existing_ones_kept(
    control_plane: ControlPlane, api_client: client.ApiClient, tmp_path: Path
) -> None:
    group = f"i{uuid.uuid4().hex[:8]}.numa-testkit.io"
    # The object before its CRD in the file: the CRD still goes first.
    (tmp_path / "all.yaml").write_text(yaml.safe_dump_all([_widget(group, "w", 1), _crd(group)]))
    install(control_plane.kubeconfig, [tmp_path])
    custom = client.CustomObjectsApi(api_client)
    assert custom.get_cluster_custom_object(group, "v1", "widgets", "w")["spec"] == {"size": 1}

    apply(control_plane.kubeconfig, [_widget(group, "w", 2), _widget(group, "x", 3)])
    assert custom.get_cluster_custom_object(group, "v1", "widgets", "w")["spec"] == {"size": 1}
    assert custom.get_cluster_custom_object(group, "v1", "widgets", "x")["spec"] == {"size": 3}

    delete(control_plane.kubeconfig, [_widget(group, "x", 3), _widget(group, "gone", 0)])
    with pytest.raises(client.ApiException) as err:
        custom.get_cluster_custom_object(group, "v1", "widgets", "x")
    assert err.value.status == 404


def test_a_kind_nobody_serves_is_named(control_plane: ControlPlane) -> None:
    doc = {"apiVersion": "nowhere.example/v1", "kind": "Ghost", "metadata": {"name": "g"}}
    with pytest.raises(AssertionError, match="no API serves Ghost g"):
        apply(control_plane.kubeconfig, [doc], timeout=1.0)
