"""The one rule a Pod manifest passes before any simulated kubelet or scheduler reads it:
what the API server would accept. Pure. Used by every command that takes pods
(``kubelet explain``, ``scheduler evaluate``, ``simulate``'s traces and generated pods), so
a manifest one of them refuses is refused by all of them, with the same message.

In order:

1. strict field validation against the Pod schema (:mod:`fakenrt.podschema`: unknown
   fields such as ``limit:`` for ``limits:``, wrong types);
2. the reading itself (:func:`fakenrt.podspec.pod_from_manifest`: names, quantities);
3. the API server's rules on container resources (:mod:`fakenrt.kubelet.podcheck`: resource
   names such as ``gpu``, whole numbers of GPUs, request equal to limit for extended
   resources and hugepages, hugepages only with cpu or memory).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fakenrt.kubelet.podcheck import api_errors
from fakenrt.podschema import check_manifest
from fakenrt.podspec import PodSpec, PodSpecError, pod_from_manifest


class PodInvalid(ValueError):
    """A manifest the API server would refuse; the message names the source, pod and field."""


def _pod_name(manifest: Any) -> str:
    meta = manifest.get("metadata") if isinstance(manifest, Mapping) else None
    if isinstance(meta, Mapping) and isinstance(meta.get("name"), str):
        namespace = meta.get("namespace") or "default"
        return f": pod {namespace}/{meta['name']}"
    return ""


def validated_pod(manifest: Any, *, source: str) -> PodSpec:
    """``manifest`` as a pod, if the API server would accept it. Raises :class:`PodInvalid`
    with one line naming ``source``, the pod and the field."""
    problem = check_manifest(manifest)
    if problem is not None:
        raise PodInvalid(f"{source}{_pod_name(manifest)}: strict decoding error: {problem}")
    try:
        pod = pod_from_manifest(manifest, source=source)
    except PodSpecError as exc:
        raise PodInvalid(str(exc)) from None
    errors = api_errors(pod, source=source)
    if errors:
        raise PodInvalid("; ".join(errors))
    return pod
