"""The shared client (``exporter.kubeclient``) against the real API server: every error
class from a real answer, the verbs and patch types, subresources, paging and watches."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from exporter import kubeclient
from exporter.kubeclient import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    KubeClient,
    path,
    watch_error,
)
from exporter.kubeerrors import (
    ApiError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    Transient,
    Unauthorized,
    error_class,
    error_for_status,
)
from exporter.kubesettings import ClusterConfig
from tests.controlplane.cluster import ControlPlane

pytestmark = pytest.mark.controlplane


@pytest.mark.parametrize(
    "status,error",
    [
        pytest.param(0, Transient, id="no-answer"),
        pytest.param(401, Unauthorized, id="401"),
        pytest.param(403, Forbidden, id="403"),
        pytest.param(404, NotFound, id="404"),
        pytest.param(409, Conflict, id="409"),
        pytest.param(410, Gone, id="410"),
        pytest.param(422, Invalid, id="422"),
        pytest.param(400, ApiError, id="400"),
        pytest.param(429, Transient, id="429"),
        pytest.param(500, Transient, id="500"),
        pytest.param(503, Transient, id="503"),
        pytest.param(504, Transient, id="504"),
    ],
)
def test_error_class_by_status(status: int, error: type[ApiError]) -> None:
    result = error_for_status(status, "patch pod a/b", b'{"kind":"Status","message":"why"}')
    assert type(result) is error is error_class(status)
    assert result.status == status
    assert str(result) == f"patch pod a/b: HTTP {status}: why"


def test_a_body_that_is_not_a_status_is_quoted() -> None:
    assert str(error_for_status(502, "get x", b"<html>bad gateway")) == (
        "get x: HTTP 502: <html>bad gateway"
    )


def _admin(cp: ControlPlane, **kwargs: Any) -> KubeClient:
    return KubeClient(
        ClusterConfig(server=cp.server, ca_file=cp.ca_file, token=cp.admin_token), **kwargs
    )


@pytest.fixture
def kube(control_plane: ControlPlane) -> Iterator[KubeClient]:
    client = _admin(control_plane)
    yield client
    client.close()


def _configmaps(namespace: str, *name: str) -> str:
    return path("api", "v1", "namespaces", namespace, "configmaps", *name)


def _configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_real_answers_map_to_their_classes(
    kube: KubeClient, control_plane: ControlPlane, namespace: str
) -> None:
    with pytest.raises(NotFound) as not_found:
        kube.get(_configmaps(namespace, "missing"), what="get configmap missing")
    assert not_found.value.status == 404
    assert str(not_found.value).startswith("get configmap missing: HTTP 404: ")

    kube.create(_configmaps(namespace), _configmap("a"))
    with pytest.raises(Conflict, match="already exists"):
        kube.create(_configmaps(namespace), _configmap("a"))
    with pytest.raises(Conflict, match="the object has been modified"):
        stale = kube.get(_configmaps(namespace, "a"))
        kube.replace(_configmaps(namespace, "a"), dict(stale, data={"k": "1"}))
        kube.replace(_configmaps(namespace, "a"), dict(stale, data={"k": "2"}))
    with pytest.raises(Invalid, match="Bad_Name"):
        kube.create(_configmaps(namespace), _configmap("Bad_Name"))

    anonymous = KubeClient(
        ClusterConfig(server=control_plane.server, ca_file=control_plane.ca_file)
    )
    with pytest.raises(Forbidden, match='"system:anonymous"') as forbidden:
        anonymous.get(_configmaps(namespace))
    assert forbidden.value.status == 403
    wrong_token = KubeClient(
        ClusterConfig(server=control_plane.server, ca_file=control_plane.ca_file, token="nope")
    )
    with pytest.raises(Unauthorized, match="HTTP 401") as unauthorized:
        wrong_token.get(_configmaps(namespace))
    assert unauthorized.value.status == 401


def test_a_stalled_server_is_a_transient_timeout(control_plane: ControlPlane) -> None:
    # a watch that will not send anything for 30 s, read with a 0.5 s deadline
    client = _admin(control_plane, read_timeout_s=0.5)
    with pytest.raises(Transient, match=r"ReadTimeout|timed out") as err:
        client.request(
            "GET",
            path("api", "v1", "namespaces"),
            query={"watch": "true", "resourceVersion": "999999999", "timeoutSeconds": "30"},
        )
    assert err.value.status == 0


def test_patch_types_and_delete(kube: KubeClient, namespace: str) -> None:
    cm = _configmaps(namespace, "p")
    kube.create(_configmaps(namespace), _configmap("p", a="1", b="2"))
    merged = kube.patch(cm, {"data": {"a": None, "c": "3"}}, content_type=MERGE_PATCH)
    assert merged["data"] == {"b": "2", "c": "3"}
    strategic = kube.patch(
        cm, {"metadata": {"labels": {"x": "y"}}}, content_type=STRATEGIC_MERGE_PATCH
    )
    assert strategic["metadata"]["labels"] == {"x": "y"}
    jsonpatch = kube.patch(
        cm,
        [
            {"op": "test", "path": "/data/b", "value": "2"},
            {"op": "replace", "path": "/data/b", "value": "4"},
        ],
        content_type=JSON_PATCH,
    )
    assert jsonpatch["data"] == {"b": "4", "c": "3"}
    with pytest.raises(Invalid, match="HTTP 422"):
        kube.patch(cm, [{"op": "test", "path": "/data/b", "value": "9"}], content_type=JSON_PATCH)
    uid = jsonpatch["metadata"]["uid"]
    with pytest.raises(Conflict, match="UID in the precondition"):
        kube.delete(cm, {"preconditions": {"uid": str(uuid.uuid4())}})
    kube.delete(cm, {"preconditions": {"uid": uid}})
    with pytest.raises(NotFound):
        kube.get(cm)


def test_subresources_status_and_binding(kube: KubeClient, namespace: str) -> None:
    pods = path("api", "v1", "namespaces", namespace, "pods")
    pod = kube.create(
        pods,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        },
    )
    kube.create(
        path("api", "v1", "namespaces", namespace, "pods", "p", "binding"),
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "p", "uid": pod["metadata"]["uid"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": "some-node"},
        },
    )
    status = kube.patch(
        path("api", "v1", "namespaces", namespace, "pods", "p", "status"),
        {"status": {"phase": "Running"}},
    )
    assert status["spec"]["nodeName"] == "some-node"
    assert status["status"]["phase"] == "Running"


def test_list_all_follows_continue_tokens(
    kube: KubeClient, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(7):
        kube.create(_configmaps(namespace), _configmap(f"m{i}"))
    monkeypatch.setattr(kubeclient, "LIST_PAGE", 3)
    items, version = kube.list_all(_configmaps(namespace))
    names = sorted(i["metadata"]["name"] for i in items if i["metadata"]["name"].startswith("m"))
    assert names == [f"m{i}" for i in range(7)]
    assert version


def test_watch_streams_events_and_ends_on_shutdown(kube: KubeClient, namespace: str) -> None:
    _, version = kube.list_all(_configmaps(namespace))
    opened: list[Any] = []
    events = kube.watch(
        _configmaps(namespace), resource_version=version, timeout_s=30, on_open=opened.append
    )
    kube.create(_configmaps(namespace), _configmap("w"))
    first = next(events)
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "w")
    ended = threading.Event()

    def drain() -> None:
        try:
            for _ in events:
                pass
        except Transient:
            pass
        ended.set()

    threading.Thread(target=drain, daemon=True).start()
    opened[0].shutdown()
    assert ended.wait(10)


def test_watch_without_a_version_starts_with_the_current_state(
    kube: KubeClient, namespace: str
) -> None:
    kube.create(_configmaps(namespace), _configmap("now"))
    events = kube.watch(_configmaps(namespace), timeout_s=5, fieldSelector="metadata.name=now")
    first = next(events)
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "now")


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        pytest.param({"object": {"kind": "Status", "code": 410}}, Gone, id="gone"),
        pytest.param({"object": {"kind": "Status", "code": 403}}, Forbidden, id="forbidden"),
        pytest.param({"object": {"kind": "Status", "code": "410"}}, Transient, id="code-not-int"),
        pytest.param({"object": {"kind": "Status"}}, Transient, id="no-code"),
        pytest.param({"object": {"code": 42}}, Transient, id="code-out-of-range"),
        pytest.param({"object": "garbled"}, Transient, id="object-not-a-status"),
        pytest.param({}, Transient, id="no-object"),
    ],
)
def test_watch_error_events_map_by_their_status_code(
    event: dict[str, Any], expected: type[ApiError]
) -> None:
    error = watch_error({"type": "ERROR", **event}, "watch pods")
    assert type(error) is expected
    assert str(error).startswith("watch pods: HTTP ")
