"""API-server rules on container resources that the simulator relies on. Pure.

A manifest that breaks these rules would never reach a kubelet, so the simulator and the
scheduler plugin refuse it. From ``pkg/apis/core/validation/validation.go``
(``ValidateContainerResourceRequirements``, ``validateContainerResourceName``,
``ValidateResourceQuantityValue``) and ``pkg/apis/core/helper/helpers.go``
(``IsExtendedResourceName``, ``IsStandardContainerResourceName``):

* a resource name is a qualified name; without a domain it must be a standard container
  resource (``cpu``, ``memory``, ``ephemeral-storage``, ``hugepages-<size>``), with one it
  is native (``kubernetes.io/`` in the name) or an extended resource whose quota name
  ``requests.<name>`` is a qualified name too;
* extended resources are whole numbers;
* extended resources and hugepages cannot be overcommitted: a request needs a limit and
  equals it (the kubelet's managers read device counts from limits);
* hugepages need a cpu or memory request or limit in the same container, and an amount
  that is a whole number of pages;
* the pod's name is a DNS-1123 subdomain and its namespace a DNS-1123 label
  (``ValidatePodName``, ``ValidateNamespaceName``), its containers' names DNS-1123 labels,
  unique in the pod (``validateContainers``).
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

from exporter.validation import dns_label_problem, dns_subdomain_problem, quoted
from fakenrt.kubelet.predicate import is_extended_resource
from fakenrt.podspec import ContainerSpec, PodSpec
from fakenrt.profiles.names import hugepage_size, qualified_name_problem

STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
HUGEPAGES_PREFIX = "hugepages-"


def resource_name_problem(name: str) -> str | None:
    """Why the API server refuses ``name`` in a container's resources, or None."""
    problem = qualified_name_problem(name)
    if problem is not None:
        return problem
    if "/" not in name:
        if name in STANDARD_CONTAINER_RESOURCES or name.startswith(HUGEPAGES_PREFIX):
            return None
        return (
            "must be a standard resource for containers (cpu, memory, ephemeral-storage, "
            "hugepages-<size>) or fully qualified, such as nvidia.com/gpu"
        )
    if "kubernetes.io/" in name:
        return None  # a native resource
    if name.startswith("requests.") or qualified_name_problem("requests." + name) is not None:
        return "doesn't follow extended resource name standard"
    return None


def _overcommit_forbidden(name: str) -> bool:
    return is_extended_resource(name) or name.startswith(HUGEPAGES_PREFIX)


def _container_errors(c: ContainerSpec, where: str) -> Iterator[str]:
    # requests default to limits, so a name in both is reported once, under limits
    named = [("limits", n, a) for n, a in sorted(c.limits.items())]
    named += [("requests", n, a) for n, a in sorted(c.requests.items()) if n not in c.limits]
    for part, name, amount in named:
        problem = resource_name_problem(name)
        if problem is not None:
            yield f"{where}.{part}.{name}: {problem}"
        elif is_extended_resource(name) and amount != amount.to_integral_value():
            yield f"{where}.{part}.{name}: must be an integer"
    for name, amount in sorted(c.requests.items()):
        if not _overcommit_forbidden(name) or resource_name_problem(name) is not None:
            continue
        if name not in c.limits:
            yield f"{where}.limits.{name}: a limit is required for {name}"
        elif c.limits[name] != amount:
            yield f"{where}.requests.{name}: must equal the limit for {name}"
    pages = [n for n in sorted({*c.requests, *c.limits}) if n.startswith(HUGEPAGES_PREFIX)]
    if pages and not any(n in c.requests or n in c.limits for n in ("cpu", "memory")):
        yield f"{where}: hugepages require a cpu or memory request or limit"
    for name in pages:
        try:
            size = hugepage_size(name)
        except ValueError:
            continue  # a size the nodes never publish: the pod just fits nowhere
        amount = c.limits.get(name, c.requests.get(name, Decimal(0)))
        if size is not None and amount % size:
            yield f"{where}.limits.{name}: {amount} is not a whole number of {name[10:]} pages"


def _name_errors(pod: PodSpec, source: str) -> Iterator[str]:
    problem = dns_subdomain_problem(pod.name)
    if problem:
        yield f"{source}: metadata.name: {problem}"
    problem = dns_label_problem(pod.namespace)
    if problem:
        yield f"{source}: metadata.namespace: {problem}"
    seen: set[str] = set()
    for kind, containers in (
        ("initContainers", pod.init_containers),
        ("containers", pod.containers),
    ):
        for i, c in enumerate(containers):
            problem = dns_label_problem(c.name)
            if problem:
                yield f"{source}: spec.{kind}[{i}].name: {problem}"
            elif c.name in seen:
                yield f"{source}: spec.{kind}[{i}].name: {quoted(c.name)} is used twice"
            seen.add(c.name)


def api_errors(pod: PodSpec, *, source: str) -> list[str]:
    """Messages naming ``source``, the pod, the container and the field."""
    errors = list(_name_errors(pod, source))
    if errors:  # the pod's name is in every other message
        return errors
    for kind, containers in (
        ("initContainers", pod.init_containers),
        ("containers", pod.containers),
    ):
        for i, c in enumerate(containers):
            where = f"{source}: pod {pod.key}: spec.{kind}[{i}]({c.name}).resources"
            errors.extend(_container_errors(c, where))
    return errors
