"""Reading the facts the exporter decides on from Pod objects."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.annotations import OBSERVED_MEMORY_GROUPS, OBSERVED_PLACEMENT
from exporter.pods import PodObjectError, PodView, pod_view


def _pod(containers: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
        "spec": {"containers": containers},
        "status": {},
    }
    for key, value in extra.items():
        obj[key].update(value)
    return obj


def _c(name: str, **resources: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "resources": resources}


GUARANTEED = {"limits": {"cpu": "2", "memory": "1Gi"}}


@pytest.mark.parametrize(
    "obj,qos,memory_containers",
    [
        pytest.param(
            _pod([_c("a", **GUARANTEED)], status={"qosClass": "Guaranteed"}),
            "Guaranteed",
            {"a"},
            id="guaranteed",
        ),
        pytest.param(
            _pod(
                [_c("a", requests={"cpu": "1", "memory": "0.5Gi"}), _c("b", requests={"cpu": "1"})],
                status={"qosClass": "Burstable"},
            ),
            "Burstable",
            {"a"},
            id="burstable",
        ),
        pytest.param(_pod([_c("a")]), "", set(), id="no-qos-class-in-status"),
        pytest.param(
            _pod(
                [_c("a", **GUARANTEED)],
                spec={
                    "initContainers": [
                        {**_c("side", **GUARANTEED), "restartPolicy": "Always"},
                        _c("init", **GUARANTEED),
                    ]
                },
            ),
            "",
            {"a", "side"},
            id="sidecar-counts-plain-init-does-not",
        ),
        pytest.param(
            _pod(
                [
                    _c("a", limits={"cpu": "1", "hugepages-2Mi": "2Mi"}),
                    _c("z", limits={"memory": "0"}),
                ]
            ),
            "",
            {"a"},
            id="hugepages-count-zero-memory-does-not",
        ),
    ],
)
def test_qos_and_memory_containers(
    obj: dict[str, Any], qos: str, memory_containers: set[str]
) -> None:
    view = pod_view(obj)
    assert view.qos_class == qos
    assert view.memory_containers == memory_containers


@pytest.mark.parametrize(
    "pod_resources,memory_containers",
    [
        pytest.param({"limits": {"cpu": "4", "memory": "4Gi"}}, set(), id="pod-level-limits"),
        pytest.param({"requests": {"memory": "4Gi"}}, set(), id="pod-level-memory-request"),
        pytest.param({"limits": {"hugepages-1Gi": "2Gi"}}, set(), id="pod-level-hugepages"),
        pytest.param({}, {"a"}, id="empty-pod-level-resources"),
        pytest.param({"limits": {"example.com/foo": "1"}}, {"a"}, id="unsupported-at-pod-level"),
    ],
)
def test_pod_level_resources_get_no_memory_blocks(
    pod_resources: dict[str, Any], memory_containers: set[str]
) -> None:
    # The static Memory Manager skips a pod with pod-level resources (upstream
    # pkg/kubelet/cm/memorymanager/policy_static.go, Allocate: IsPodLevelResourcesSet),
    # so its containers never report blocks: expecting them would leave "null" forever.
    obj = _pod(
        [_c("a", **GUARANTEED)],
        spec={"resources": pod_resources},
        status={"qosClass": "Guaranteed"},
    )
    view = pod_view(obj)
    assert view.memory_containers == memory_containers
    assert view.expected_memory_containers(memory_manager_static=True) == memory_containers


def test_expected_memory_containers_only_for_guaranteed_with_static_policy() -> None:
    view = pod_view(_pod([_c("a", **GUARANTEED)], status={"qosClass": "Guaranteed"}))
    assert view.expected_memory_containers(memory_manager_static=True) == {"a"}
    assert view.expected_memory_containers(memory_manager_static=False) == frozenset()


@pytest.mark.parametrize(
    "status,admitted,terminal",
    [
        pytest.param({"phase": "Pending"}, False, False, id="pending-not-started"),
        pytest.param(
            {"phase": "Pending", "startTime": "2026-01-01T00:00:00Z"}, True, False, id="pending"
        ),
        pytest.param({"phase": "Running"}, True, False, id="running"),
        pytest.param({"phase": "Succeeded"}, False, True, id="succeeded"),
        pytest.param({"phase": "Failed"}, False, True, id="failed"),
    ],
)
def test_phase(status: dict[str, str], admitted: bool, terminal: bool) -> None:
    view = pod_view(_pod([_c("a")], status=status))
    assert (view.admitted, view.terminal) == (admitted, terminal)
    assert view.writable == admitted


def test_a_pod_being_deleted_is_not_written() -> None:
    view = pod_view(
        _pod([_c("a")], metadata={"deletionTimestamp": "2026-01-01T00:00:00Z"},
             status={"phase": "Running"})
    )  # fmt: skip
    assert view.admitted and not view.writable


def test_annotations_and_identity() -> None:
    view = pod_view(
        _pod(
            [_c("a")],
            metadata={
                "annotations": {OBSERVED_PLACEMENT: "[]", "other": "x"},
                "deletionTimestamp": "2026-01-01T00:00:00Z",
            },
            status={"startTime": "2026-01-01T00:00:10Z"},
        )
    )
    assert (view.key, view.uid, view.resource_version) == ("ns/p", "u1", "7")
    assert view.annotation(OBSERVED_PLACEMENT) == "[]"
    assert view.annotation(OBSERVED_MEMORY_GROUPS) is None
    assert view.deleting
    assert view.started_at == 1767225610.0


def test_bad_objects_name_the_pod() -> None:
    with pytest.raises(PodObjectError, match=r"metadata\.uid"):
        pod_view({"metadata": {"name": "p", "namespace": "ns"}})
    with pytest.raises(
        PodObjectError, match=r"pod ns/p: spec\.containers\(a\)\.resources\.limits\.memory"
    ):
        pod_view(_pod([_c("a", limits={"memory": "lots"})]))


@pytest.mark.parametrize(
    "quantity,requests_memory",
    [
        pytest.param("0", False, id="zero"),
        pytest.param("0Gi", False, id="zero-with-suffix"),
        pytest.param("0.0", False, id="zero-decimal"),
        pytest.param("1", True, id="one-byte"),
        pytest.param("0.5Gi", True, id="fraction"),
        pytest.param(".5Mi", True, id="leading-dot"),
        pytest.param("1e3", True, id="exponent"),
        pytest.param("128974848000m", True, id="milli"),
        pytest.param("16E", True, id="exa"),
    ],
)
def test_memory_request_detection(quantity: str, requests_memory: bool) -> None:
    view = pod_view(_pod([_c("a", requests={"memory": quantity})]))
    assert (view.memory_containers == {"a"}) is requests_memory


def test_with_metadata_takes_what_a_metadata_write_changes() -> None:
    pod = PodView(namespace="ns", name="p", uid="u", resource_version="7", phase="Running",
                  started_at=5.0, qos_class="Guaranteed", memory_containers=frozenset({"c"}),
                  placement_annotation="old", memory_groups_annotation="[]")  # fmt: skip
    meta = {
        "name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "9",
        "annotations": {OBSERVED_PLACEMENT: "new", "other": "x"},
        "deletionTimestamp": "2026-11-24T00:00:00Z",
    }  # fmt: skip
    assert pod.with_metadata(meta) == PodView(
        namespace="ns", name="p", uid="u", resource_version="9", phase="Running",
        started_at=5.0, deleting=True, qos_class="Guaranteed",
        memory_containers=frozenset({"c"}), placement_annotation="new",
        memory_groups_annotation=None,
    )  # fmt: skip
    with pytest.raises(PodObjectError, match=r"metadata\.uid 'v' is not 'u'"):
        pod.with_metadata({**meta, "uid": "v"})
