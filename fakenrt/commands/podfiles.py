"""Pod manifests given on the command line (``kubelet explain``, ``scheduler evaluate``),
read and validated as the API server would before any kubelet or scheduler sees them.

A file holds one or more YAML documents; a ``kind: List`` (or ``PodList``, as ``kubectl
get pods -o yaml`` prints) is expanded into its items. Every pod passes the one rule of
:mod:`fakenrt.podvalidation` (strict fields, the reading, the API server's rules on
container resources), as ``fakenrt simulate``'s traces do.

Every error is one line naming the file (and document), the pod and the field.

``kubelet explain`` also takes the ResourceClaims its pods use, as resource.k8s.io/v1
documents in the same files (``kubectl get resourceclaim -o yaml``, with the allocation
the scheduler wrote), strictly validated against the ResourceClaim schema; where only
pods are read, such documents are validated and left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fakenrt.dra.claims import ClaimSpecError, ResourceClaim, claim_from_manifest
from fakenrt.podschema import check_manifest
from fakenrt.podspec import PodSpec
from fakenrt.podvalidation import PodInvalid
from fakenrt.podvalidation import validated_pod as _validated_pod
from fakenrt.profiles.loading import load_yaml_documents
from fakenrt.textfiles import TextFileError, read_text
from fakenrt.yamltext import YamlError

LIST_KINDS = ("List", "PodList", "ResourceClaimList")
CLAIM_KIND = "ResourceClaim"
#: Pods (and their ResourceClaims) one command reads: a node runs at most its maxPods
#: (110 by default, a few hundred where raised); each pod costs about a millisecond to
#: validate and admit.
MAX_PODS = 1000


class InputError(ValueError):
    """Invalid pod or profile input; the message names the file, the object and the field."""


def manifests_in(text: str, *, source: str) -> list[tuple[str, Any]]:
    """The manifests of a YAML text, each with the label to name it by in errors."""
    try:
        documents = load_yaml_documents(text)
    except YamlError as exc:
        raise InputError(f"{source}: {exc}") from None
    found: list[tuple[int, int | None, Any]] = []
    for i, doc in enumerate(documents):
        if isinstance(doc, Mapping) and doc.get("kind") in LIST_KINDS:
            items = doc.get("items")
            if not isinstance(items, list):
                raise InputError(f"{source}: a {doc['kind']} must have an 'items' list")
            found.extend((i, j, item) for j, item in enumerate(items))
        else:
            found.append((i, None, doc))
    if len(found) > MAX_PODS:
        raise InputError(
            f"{source}: {len(found)} pods; fakenrt reads at most {MAX_PODS} (a node runs at "
            "most its maxPods, 110 by default)"
        )
    several = len(documents) > 1
    out: list[tuple[str, Any]] = []
    for i, j, manifest in found:
        label = f"{source} (document {i + 1})" if several else source
        out.append((label if j is None else f"{label} items[{j}]", manifest))
    return out


def validated_pod(manifest: Any, *, source: str) -> PodSpec:
    """``manifest`` as a pod, if the API server would accept it (the one rule,
    :func:`fakenrt.podvalidation.validated_pod`). Raises InputError."""
    try:
        return _validated_pod(manifest, source=source)
    except PodInvalid as exc:
        raise InputError(str(exc)) from None


def parse_pods(text: str, *, source: str) -> list[PodSpec]:
    """Every Pod of a (multi-document) YAML text, validated (ResourceClaims in it are
    validated and left out)."""
    manifests = manifests_in(text, source=source)
    pods = [validated_pod(m, source=label) for label, m in manifests if _is_pod(m, source=label)]
    if not pods:
        raise InputError(f"{source}: no Pod found")
    return pods


def _is_pod(manifest: Any, *, source: str) -> bool:
    """False for a ResourceClaim (validated), True for anything else (read as a Pod)."""
    if isinstance(manifest, Mapping) and manifest.get("kind") == CLAIM_KIND:
        validated_claim(manifest, source=source)
        return False
    return True


def read_manifests(path: str) -> list[tuple[str, Any]]:
    """The manifests of a file (bounded read, UTF-8 text). Raises InputError."""
    try:
        text = read_text(path)
    except TextFileError as exc:
        raise InputError(str(exc)) from None
    return manifests_in(text, source=path)


def read_pods(paths: Sequence[str]) -> list[PodSpec]:
    """Every pod of the files, in order; a pod given twice is an error. ResourceClaims
    in them are validated and left out."""
    return read_pods_and_claims(paths)[0]


def validated_claim(manifest: Any, *, source: str) -> ResourceClaim:
    """``manifest`` as a ResourceClaim, if the API server would accept it."""
    problem = check_manifest(manifest, claim=True)
    if problem is not None:
        raise InputError(f"{source}: ResourceClaim: strict decoding error: {problem}")
    try:
        return claim_from_manifest(manifest, source=source)
    except ClaimSpecError as exc:
        raise InputError(str(exc)) from None


def read_pods_and_claims(paths: Sequence[str]) -> tuple[list[PodSpec], list[ResourceClaim]]:
    """Every pod and every ResourceClaim of the files, in order; a pod or claim given
    twice is an error, and so is a file with neither."""
    pods: list[PodSpec] = []
    claims: list[ResourceClaim] = []
    seen: dict[str, str] = {}
    for path in paths:
        manifests = read_manifests(path)
        if not manifests:
            raise InputError(f"{path}: no Pod found")
        if len(pods) + len(manifests) > MAX_PODS:
            raise InputError(f"{path}: more than {MAX_PODS} pods and claims in the files given")
        for label, manifest in manifests:
            if isinstance(manifest, Mapping) and manifest.get("kind") == CLAIM_KIND:
                claim = validated_claim(manifest, source=label)
                key = f"ResourceClaim {claim.key}"
                item: PodSpec | ResourceClaim = claim
            else:
                pod = validated_pod(manifest, source=label)
                key = f"pod {pod.key}"
                item = pod
            if key in seen:
                raise InputError(f"{path}: {key} is already given in {seen[key]}")
            seen[key] = path
            if isinstance(item, ResourceClaim):
                claims.append(item)
            else:
                pods.append(item)
    if not pods:
        raise InputError(f"{', '.join(paths)}: no Pod found")
    return pods, claims
