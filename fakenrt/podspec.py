"""Pods as the kubelet's resource managers see them: containers, requests, QoS.

Pure. Parses an ordinary Pod manifest (a dict, as loaded from YAML or returned by the
API) into frozen values, applying the API server's defaulting that matters here (a
missing request defaults to its limit) so files and live objects read the same.

Rules mirrored from upstream:

* QoS class: ``pkg/apis/core/v1/helper/qos/qos.go`` (``GetPodQOS``) - only ``cpu`` and
  ``memory`` count; Guaranteed iff every container, init containers included, sets both
  limits and its requests equal them.
* Effective pod requests: ``k8s.io/component-helpers/resource/helpers.go``
  (``PodRequests``) - the larger of the regular containers plus all sidecars, and each
  init container plus the sidecars started before it.
* ResourceClaims (``spec.resourceClaims``, ``resources.claims``): the API server's rules
  (``pkg/apis/core/validation/validation.go``, ``validatePodResourceClaims`` and
  ``validateResourceClaimNames``): pod claim names are unique DNS labels, each sets exactly
  one of ``resourceClaimName`` and ``resourceClaimTemplateName``, and a container may use
  only the pod's claims, each (name, request) once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from functools import cached_property
from typing import Any, TypeVar

from exporter.quantities import QuantityError, parse_decimal
from exporter.validation import quoted
from fakenrt.profiles.names import dns_subdomain_problem

QOS_RESOURCES = ("cpu", "memory")
#: The kubelet reads quantities as 64-bit integers (``Quantity.Value`` / ``MilliValue``).
MAX_INT64 = 2**63 - 1
#: Pod phases after which a pod holds nothing on its node.
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


class PodSpecError(ValueError):
    """A pod manifest this project cannot read; the message names the pod and the field."""


class QOSClass(StrEnum):
    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


@dataclass(frozen=True)
class ContainerClaim:
    """An entry of a container's ``resources.claims``: a pod claim it uses, and the one
    request of that claim (``""``: every request)."""

    name: str
    request: str = ""


@dataclass(frozen=True)
class PodClaim:
    """An entry of ``spec.resourceClaims``: a claim by name, or one made from a template
    (its name is then in the pod's ``status.resourceClaimStatuses``)."""

    name: str
    claim_name: str | None = None
    template_name: str | None = None


@dataclass(frozen=True)
class ContainerSpec:
    """One container's resources. ``requests`` already carries the limit-defaulting."""

    name: str
    requests: Mapping[str, Decimal] = field(default_factory=dict)
    limits: Mapping[str, Decimal] = field(default_factory=dict)
    #: An init container with ``restartPolicy: Always`` (a native sidecar).
    restartable: bool = False
    claims: tuple[ContainerClaim, ...] = ()


@dataclass(frozen=True)
class PodSpec:
    namespace: str
    name: str
    uid: str = ""
    init_containers: tuple[ContainerSpec, ...] = ()
    containers: tuple[ContainerSpec, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=dict)
    node_name: str = ""
    resource_claims: tuple[PodClaim, ...] = ()
    #: ``status.resourceClaimStatuses``: pod claim name -> the generated claim's name
    #: (None: the template needed no claim); absent until the claim is created.
    claim_statuses: Mapping[str, str | None] = field(default_factory=dict)

    @cached_property
    def key(self) -> str:
        """``namespace/name`` (made once: a run reads it for every pod on every change of
        its node)."""
        return f"{self.namespace}/{self.name}"

    @property
    def sidecars(self) -> tuple[ContainerSpec, ...]:
        return tuple(c for c in self.init_containers if c.restartable)

    @cached_property
    def qos(self) -> QOSClass:
        """The pod's QoS class (:func:`qos_class`), computed once."""
        return _qos_class(self)


def qos_class(pod: PodSpec) -> QOSClass:
    """The pod's QoS class, as the API server computes ``status.qosClass``."""
    return pod.qos


def _qos_class(pod: PodSpec) -> QOSClass:
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for c in (*pod.init_containers, *pod.containers):
        for name in QOS_RESOURCES:
            req = c.requests.get(name, Decimal(0))
            if req != 0:
                requests[name] = requests.get(name, Decimal(0)) + req
            lim = c.limits.get(name, Decimal(0))
            if lim != 0:
                limits[name] = limits.get(name, Decimal(0)) + lim
        if not all(c.limits.get(name, Decimal(0)) != 0 for name in QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return QOSClass.BEST_EFFORT
    if guaranteed and requests == limits:
        return QOSClass.GUARANTEED
    return QOSClass.BURSTABLE


Amount = TypeVar("Amount", int, Decimal)


def pod_level(
    inits: Iterable[tuple[bool, Mapping[str, Amount]]], apps: Iterable[Mapping[str, Amount]]
) -> dict[str, Amount]:
    """``PodRequests``' rule over any per-container amounts: per resource, the larger of
    (every app container + every sidecar) and, for each init container in order, itself
    plus the sidecars started before it. ``inits`` pairs each init container's amounts
    with whether it is a native sidecar (restartable). Zero totals are dropped.

    The kubelet's pod-scope providers apply the same rule to what they align
    (``podGuaranteedCPUs``, the Memory Manager's and Device Manager's pod-level sums)."""
    sidecars: dict[str, Amount] = {}
    init_peak: dict[str, Amount] = {}
    for restartable, amounts in inits:
        for name, amount in amounts.items():
            step = sidecars.get(name, 0) + amount
            if restartable:
                sidecars[name] = step
            elif name not in init_peak or step > init_peak[name]:
                init_peak[name] = step
    total: dict[str, Amount] = {}
    for amounts in apps:
        for name, amount in amounts.items():
            total[name] = total.get(name, 0) + amount
    for name, amount in sidecars.items():
        total[name] = total.get(name, 0) + amount
    for name, amount in init_peak.items():
        if name not in total or amount > total[name]:
            total[name] = amount
    return {name: amount for name, amount in total.items() if amount != 0}


def effective_requests(pod: PodSpec) -> dict[str, Decimal]:
    """The pod's effective requests (what a node must have free to run it)."""
    return pod_level(
        ((c.restartable, c.requests) for c in pod.init_containers),
        (c.requests for c in pod.containers),
    )


def _resources(raw: Any, where: str) -> dict[str, Decimal]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise PodSpecError(f"{where} must be a mapping of resource name to quantity")
    out: dict[str, Decimal] = {}
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise PodSpecError(f"{where}.{name}: {quoted(value)} is not a quantity")
        try:
            amount = parse_decimal(value)
        except QuantityError as exc:
            raise PodSpecError(f"{where}.{name}: {exc}") from exc
        if not amount.is_finite():
            raise PodSpecError(f"{where}.{name}: {quoted(value)} is not a finite quantity")
        if amount < 0:
            raise PodSpecError(f"{where}.{name}: {quoted(value)} is negative")
        if amount * (1000 if name == "cpu" else 1) > MAX_INT64:
            raise PodSpecError(
                f"{where}.{name}: {quoted(value)} is out of range (the kubelet reads quantities as "
                "64-bit integers)"
            )
        out[str(name)] = amount
    return out


_DNS_LABEL_MAX = 63


def _dns_label_problem(name: object) -> str | None:
    if not isinstance(name, str) or not name:
        return "must be a non-empty string"
    if len(name) > _DNS_LABEL_MAX or "." in name or dns_subdomain_problem(name) is not None:
        return "must be a DNS label (at most 63 lower-case letters, digits and '-')"
    return None


def _container_claims(raw: Any, where: str) -> tuple[ContainerClaim, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise PodSpecError(f"{where} must be a list")
    out: list[ContainerClaim] = []
    for i, entry in enumerate(raw):
        item = f"{where}[{i}]"
        if not isinstance(entry, Mapping):
            raise PodSpecError(f"{item} must be a mapping with a 'name'")
        problem = _dns_label_problem(entry.get("name"))
        if problem is not None:
            raise PodSpecError(f"{item}.name: {problem}")
        request = entry.get("request") or ""
        if not isinstance(request, str) or (request and _dns_label_problem(request)):
            raise PodSpecError(f"{item}.request: must be a DNS label")
        claim = ContainerClaim(entry["name"], request)
        if claim in out:
            raise PodSpecError(f"{item}: duplicate claim {claim.name}")
        out.append(claim)
    return tuple(out)


def _pod_claims(raw: Any, where: str) -> tuple[PodClaim, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise PodSpecError(f"{where} must be a list")
    out: list[PodClaim] = []
    for i, entry in enumerate(raw):
        item = f"{where}[{i}]"
        if not isinstance(entry, Mapping):
            raise PodSpecError(f"{item} must be a mapping with a 'name'")
        problem = _dns_label_problem(entry.get("name"))
        if problem is not None:
            raise PodSpecError(f"{item}.name: {problem}")
        if any(c.name == entry["name"] for c in out):
            raise PodSpecError(f"{item}.name: duplicate pod claim name {entry['name']!r}")
        given = {k: entry.get(k) for k in ("resourceClaimName", "resourceClaimTemplateName")}
        set_ = [k for k, v in given.items() if v is not None]
        if len(set_) != 1:
            raise PodSpecError(
                f"{item}: must specify exactly one of: resourceClaimName, resourceClaimTemplateName"
            )
        value = given[set_[0]]
        if not isinstance(value, str) or dns_subdomain_problem(value) is not None:
            raise PodSpecError(f"{item}.{set_[0]}: must be a DNS subdomain")
        out.append(
            PodClaim(
                entry["name"],
                claim_name=given["resourceClaimName"],
                template_name=given["resourceClaimTemplateName"],
            )
        )
    return tuple(out)


def _claim_statuses(raw: Any) -> dict[str, str | None]:
    """``status.resourceClaimStatuses`` (written by the control plane; malformed entries
    are left out, as a claim not created yet)."""
    out: dict[str, str | None] = {}
    if not isinstance(raw, list):
        return out
    for entry in raw:
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
            generated = entry.get("resourceClaimName")
            out[entry["name"]] = generated if isinstance(generated, str) else None
    return out


def _container(raw: Any, where: str, *, init: bool) -> ContainerSpec:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
        raise PodSpecError(f"{where} must be a mapping with a non-empty 'name'")
    where = f"{where}({raw['name']})"
    resources = raw.get("resources") or {}
    if not isinstance(resources, dict):
        raise PodSpecError(f"{where}.resources must be a mapping")
    limits = _resources(resources.get("limits"), f"{where}.resources.limits")
    requests = _resources(resources.get("requests"), f"{where}.resources.requests")
    for name, amount in limits.items():
        requests.setdefault(name, amount)  # API defaulting: request defaults to limit
    for name, amount in requests.items():
        if name in limits and amount > limits[name]:
            raise PodSpecError(f"{where}.resources: request for {name} exceeds its limit")
    restart_policy = raw.get("restartPolicy")
    if restart_policy not in (None, "Always"):
        raise PodSpecError(
            f"{where}.restartPolicy: only 'Always' is allowed, not {quoted(restart_policy)}"
        )
    if restart_policy == "Always" and not init:
        raise PodSpecError(f"{where}.restartPolicy is only allowed on init containers")
    return ContainerSpec(
        name=raw["name"],
        requests=requests,
        limits=limits,
        restartable=restart_policy == "Always",
        claims=_container_claims(resources.get("claims"), f"{where}.resources.claims"),
    )


def pod_from_manifest(manifest: Mapping[str, Any], *, source: str = "pod") -> PodSpec:
    """Read a Pod manifest (dict). Raises PodSpecError naming ``source``, the pod and field."""
    if not isinstance(manifest, Mapping):
        raise PodSpecError(f"{source}: a Pod manifest must be a mapping")
    kind = manifest.get("kind", "Pod")
    if kind != "Pod":
        raise PodSpecError(f"{source}: expected kind Pod, found {quoted(kind)}")
    meta = manifest.get("metadata") or {}
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise PodSpecError(f"{source}: metadata.name is required")
    namespace = meta.get("namespace") or "default"
    where = f"{source}: pod {namespace}/{meta['name']}"
    spec = manifest.get("spec")
    if not isinstance(spec, Mapping):
        raise PodSpecError(f"{where}: spec is required")
    raw_containers = spec.get("containers")
    if not isinstance(raw_containers, list) or not raw_containers:
        raise PodSpecError(f"{where}: spec.containers must be a non-empty list")
    raw_inits = spec.get("initContainers") or []
    if not isinstance(raw_inits, list):
        raise PodSpecError(f"{where}: spec.initContainers must be a list")
    inits = tuple(
        _container(c, f"{where}: spec.initContainers[{i}]", init=True)
        for i, c in enumerate(raw_inits)
    )
    containers = tuple(
        _container(c, f"{where}: spec.containers[{i}]", init=False)
        for i, c in enumerate(raw_containers)
    )
    names = [c.name for c in (*inits, *containers)]
    if len(set(names)) != len(names):
        raise PodSpecError(f"{where}: container names must be unique")
    claims = _pod_claims(spec.get("resourceClaims"), f"{where}: spec.resourceClaims")
    known = {c.name for c in claims}
    for c in (*inits, *containers):
        for used in c.claims:
            if used.name not in known:
                raise PodSpecError(
                    f"{where}: container {c.name}: resources.claims: {used.name!r} must be one "
                    "of the names in spec.resourceClaims"
                )
    status = manifest.get("status") or {}
    annotations = meta.get("annotations") or {}
    if not isinstance(annotations, Mapping):
        raise PodSpecError(f"{where}: metadata.annotations must be a mapping")
    return PodSpec(
        namespace=str(namespace),
        name=meta["name"],
        uid=str(meta.get("uid") or ""),
        init_containers=inits,
        containers=containers,
        annotations={str(k): str(v) for k, v in annotations.items()},
        node_name=str(spec.get("nodeName") or ""),
        resource_claims=claims,
        claim_statuses=_claim_statuses(
            status.get("resourceClaimStatuses") if isinstance(status, Mapping) else None
        ),
    )
