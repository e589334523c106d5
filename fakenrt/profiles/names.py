"""Kubernetes naming rules a profile must follow (node names, resource names, labels). Pure.

Rules from ``k8s.io/apimachinery/pkg/util/validation/validation.go`` (DNS-1123 subdomain,
qualified names, label values) and ``pkg/apis/core/v1/helper/helpers.go``
(``IsExtendedResourceName``, ``HugePageResourceName``).
"""

from __future__ import annotations

import re

from exporter.quantities import QuantityError, parse_integer

_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
HUGEPAGES_PREFIX = "hugepages-"
_BINARY_SUFFIXES = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20))
_MIN_PAGE_SIZE = 4096


def dns_subdomain_problem(name: str) -> str | None:
    """Why ``name`` is not a DNS-1123 subdomain (the rule for Node names), or None."""
    if not name:
        return "must not be empty"
    if len(name) > 253:
        return "must be at most 253 characters"
    if not _DNS1123_SUBDOMAIN.match(name):
        return (
            "must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', "
            "starting and ending with a letter or digit"
        )
    return None


def qualified_name_problem(name: str) -> str | None:
    """Why ``name`` is not a qualified name (``[prefix/]name``, label keys), or None."""
    prefix, slash, local = name.rpartition("/")
    if slash and (not prefix or dns_subdomain_problem(prefix) is not None):
        return f"prefix {prefix!r} must be a DNS-1123 subdomain"
    if not local or len(local) > 63 or not _QUALIFIED_NAME_PART.match(local):
        return (
            f"name part {local!r} must be 1-63 characters of letters, digits, '-', '_' "
            "or '.', starting and ending with a letter or digit"
        )
    return None


def label_value_problem(value: str) -> str | None:
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        return (
            "must be at most 63 characters of letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    return None


def extended_resource_problem(name: str) -> str | None:
    """Why ``name`` cannot be a device (extended) resource, or None.

    Extended resources are fully qualified (``vendor.com/thing``) and live outside the
    ``kubernetes.io`` namespace; ``requests.*`` is reserved for quotas.
    """
    if "/" not in name:
        return "a device resource must be fully qualified, such as nvidia.com/gpu"
    problem = qualified_name_problem(name)
    if problem is not None:
        return problem
    domain = name.split("/", 1)[0]
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        return "the kubernetes.io namespace is reserved for native resources"
    if name.startswith("requests."):
        return "names starting with 'requests.' are reserved for quotas"
    return None


def hugepage_size(resource: str) -> int | None:
    """The page size in bytes of a ``hugepages-<size>`` resource, None for other names.

    Raises ValueError when the name has the prefix but not a valid, canonical size (the
    kubelet names the resource after the canonical quantity: ``hugepages-2Mi``, never
    ``hugepages-2048Ki``).
    """
    if not resource.startswith(HUGEPAGES_PREFIX):
        return None
    size_text = resource[len(HUGEPAGES_PREFIX) :]
    try:
        size = parse_integer(size_text)
    except QuantityError:
        raise ValueError(f"{size_text!r} is not a page size such as 2Mi or 1Gi") from None
    if size < _MIN_PAGE_SIZE or size & (size - 1):
        raise ValueError(f"page size {size_text!r} must be a power of two of at least 4Ki")
    canonical = HUGEPAGES_PREFIX + canonical_binary(size)
    if canonical != resource:
        raise ValueError(f"write {canonical!r}: the kubelet names hugepages by canonical size")
    return size


def canonical_binary(size: int) -> str:
    """A byte count in the binary-SI form Kubernetes prints (``2097152`` -> ``2Mi``)."""
    for suffix, factor in _BINARY_SUFFIXES:
        if size % factor == 0:
            return f"{size // factor}{suffix}"
    if size % 1024 == 0:
        return f"{size // 1024}Ki"
    return str(size)


def device_id_prefix(resource: str) -> str:
    """The prefix of generated device ids: the resource's name part, upper-cased
    (``nvidia.com/gpu`` -> ``GPU``, so ids read ``GPU-0``, ``GPU-1``, ...)."""
    return resource.rsplit("/", 1)[-1].upper()
