"""The harness's per-fake-node exporters, derived from the production DaemonSet. Pure.

A real node runs one numa-exporter pod (the DaemonSet in ``manifests/exporter``) against
the kubelet's ``/var/lib/kubelet/pod-resources`` and ``/sys``. A fake node's kubelet is
the fakenrt controller, which serves ``<state-dir>/<node>/kubelet.sock`` and
``<state-dir>/<node>/sys`` on the host it runs on. :func:`exporter_deployments` turns the
DaemonSet into one Deployment per fake node whose pod is the production pod with only
what a fake node needs changed:

* ``NODE_NAME`` is the fake node's name (not the downward API: the pod does not run
  on the fake node, which has no kubelet);
* each hostPath under ``/var/lib/kubelet/pod-resources`` or ``/sys`` moves under
  ``<state-dir>/<node>`` (the same paths inside the container, so the exporter's
  arguments are unchanged);
* the ServiceAccount is the harness's exporter account;
* tolerations are dropped and the pod must run beside the controller (pod affinity on
  the host, since the sockets are in a hostPath) and never on a fake node.

Image, command, arguments, probes, resources and security settings are untouched.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

from fakenrt.controller.nodeobjects import FAKE_NODE_LABEL

#: Label of the controller's pods, for the exporters' pod affinity.
CONTROLLER_POD_LABELS = {"app.kubernetes.io/name": "fakenrt-controller"}
#: Label naming an exporter pod's fake node.
NODE_LABEL = "fakenrt.io/node"

_KUBELET_PODRESOURCES = "/var/lib/kubelet/pod-resources"
_SYSFS = "/sys"
# A label value: at most 63 characters, alphanumerics at both ends.
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_MAX_NAME = 253


class HarnessError(ValueError):
    """The DaemonSet or a node name cannot be turned into harness exporters."""


def _host_path(original: str, *, state_dir: str, node: str) -> str:
    base = f"{state_dir.rstrip('/')}/{node}"
    if original == _KUBELET_PODRESOURCES or original.startswith(_KUBELET_PODRESOURCES + "/"):
        return base + original[len(_KUBELET_PODRESOURCES) :]
    if original == _SYSFS or original.startswith(_SYSFS + "/"):
        return f"{base}/sys{original[len(_SYSFS) :]}"
    raise HarnessError(
        f"hostPath {original!r} is neither under {_KUBELET_PODRESOURCES} nor under {_SYSFS}: "
        "no fake-node equivalent"
    )


def _pod_template(
    template: Mapping[str, Any], *, node: str, state_dir: str, service_account: str
) -> dict[str, Any]:
    tmpl = copy.deepcopy(dict(template))
    meta = tmpl.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), NODE_LABEL: node}
    spec = tmpl.get("spec")
    if not isinstance(spec, dict) or not spec.get("containers"):
        raise HarnessError("the DaemonSet's spec.template.spec has no containers")
    spec["serviceAccountName"] = service_account
    spec.pop("tolerations", None)
    spec.pop("nodeSelector", None)
    spec["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": FAKE_NODE_LABEL, "operator": "DoesNotExist"}]}
                ]
            }
        },
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": dict(CONTROLLER_POD_LABELS)},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        },
    }
    found_node_name = False
    for container in spec["containers"]:
        for env in container.get("env") or []:
            if env.get("name") == "NODE_NAME":
                env.pop("valueFrom", None)
                env["value"] = node
                found_node_name = True
    if not found_node_name:
        raise HarnessError("no container of the DaemonSet sets NODE_NAME")
    for volume in spec.get("volumes") or []:
        host = volume.get("hostPath")
        if host is None:
            continue
        host["path"] = _host_path(str(host.get("path", "")), state_dir=state_dir, node=node)
        # The controller creates the node's directory when it starts; until then the
        # kubelet creates it empty and the exporter waits for the socket.
        host["type"] = "DirectoryOrCreate"
    return tmpl


def exporter_deployments(
    daemonset: Mapping[str, Any],
    nodes: Sequence[str],
    *,
    namespace: str,
    state_dir: str,
    service_account: str,
) -> list[dict[str, Any]]:
    """One Deployment per fake node in ``nodes`` (named ``<daemonset>-<node>``, in
    ``namespace``) running the DaemonSet's pod for that node. Raises HarnessError naming
    the node or field."""
    if daemonset.get("kind") != "DaemonSet":
        raise HarnessError(f"expected a DaemonSet, got kind {daemonset.get('kind')!r}")
    if not state_dir.startswith("/"):
        raise HarnessError(f"state directory {state_dir!r} must be an absolute path")
    meta = daemonset.get("metadata") or {}
    base_name = str(meta.get("name") or "")
    template = (daemonset.get("spec") or {}).get("template")
    if not base_name or not isinstance(template, Mapping):
        raise HarnessError("the DaemonSet needs metadata.name and spec.template")
    selector = dict(((daemonset.get("spec") or {}).get("selector") or {}).get("matchLabels") or {})
    if len(set(nodes)) != len(nodes):
        raise HarnessError("node names repeat")
    out: list[dict[str, Any]] = []
    for node in nodes:
        if not _LABEL_VALUE.match(node):
            raise HarnessError(
                f"node {node!r}: not usable as a label value (at most 63 characters, "
                "alphanumerics, '-', '_', '.')"
            )
        name = f"{base_name}-{node}"
        if len(name) > _MAX_NAME:
            raise HarnessError(f"node {node!r}: Deployment name {name!r} is too long")
        labels = {**(meta.get("labels") or {}), NODE_LABEL: node}
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": namespace, "labels": labels},
                "spec": {
                    "replicas": 1,
                    # Like a DaemonSet: never two exporters for one node at once.
                    "strategy": {"type": "Recreate"},
                    "selector": {"matchLabels": {**selector, NODE_LABEL: node}},
                    "template": _pod_template(
                        template, node=node, state_dir=state_dir, service_account=service_account
                    ),
                },
            }
        )
    return out
