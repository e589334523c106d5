"""API-server rules on container resources that the simulator relies on. Pure.

The kubelet's managers read device counts from *limits* and trust that requests equal
limits for resources that cannot be overcommitted (``pkg/apis/core/validation``:
extended resources and hugepages need a limit, and a request equal to it). A manifest
that breaks these rules would never reach a kubelet, so the simulator refuses it.
"""

from __future__ import annotations

from fakenrt.kubelet.predicate import is_extended_resource
from fakenrt.podspec import PodSpec


def api_errors(pod: PodSpec, *, source: str) -> list[str]:
    """Messages naming ``source``, the pod, the container and the field."""
    errors: list[str] = []
    for kind, containers in (
        ("initContainers", pod.init_containers),
        ("containers", pod.containers),
    ):
        for i, c in enumerate(containers):
            where = f"{source}: pod {pod.key}: spec.{kind}[{i}]({c.name}).resources"
            for name, amount in sorted(c.requests.items()):
                if not (is_extended_resource(name) or name.startswith("hugepages-")):
                    continue
                if name not in c.limits:
                    errors.append(f"{where}.limits.{name}: a limit is required for {name}")
                elif c.limits[name] != amount:
                    errors.append(f"{where}.requests.{name}: must equal the limit for {name}")
                elif is_extended_resource(name) and amount != amount.to_integral_value():
                    errors.append(f"{where}.limits.{name}: must be a whole number")
    return errors
