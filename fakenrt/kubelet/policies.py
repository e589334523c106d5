"""Policy factory: the kubelet's ``topologyManagerPolicy`` name -> a policy. Fails loudly
on an unknown name or option, as ``NewManager`` / ``NewPolicyOptions`` do
(``topology_manager.go``, ``policy_options.go``)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from fakenrt.kubelet import (
    policy_best_effort,
    policy_none,
    policy_restricted,
    policy_single_numa_node,
)
from fakenrt.kubelet.numa_info import NumaInfo
from fakenrt.kubelet.policy import Policy

PREFER_CLOSEST_NUMA_NODES = "prefer-closest-numa-nodes"
MAX_ALLOWABLE_NUMA_NODES = "max-allowable-numa-nodes"
DEFAULT_MAX_ALLOWABLE_NUMA_NODES = 8
_TRUE = frozenset({"1", "t", "T", "true", "TRUE", "True"})
_FALSE = frozenset({"0", "f", "F", "false", "FALSE", "False"})
_GO_ATOI = re.compile(r"[+-]?[0-9]+")


class PolicyError(ValueError):
    """An unknown policy, scope or policy option: the kubelet would refuse to start."""


def parse_bool(name: str, value: str) -> bool:
    """Go ``strconv.ParseBool``."""
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise PolicyError(f"bad value for option {name!r}: {value!r} is not a boolean")


def prefer_closest(options: Mapping[str, str]) -> bool:
    """Validate ``topologyManagerPolicyOptions`` and return prefer-closest-numa-nodes."""
    result = False
    for name, value in options.items():
        if name == PREFER_CLOSEST_NUMA_NODES:
            result = parse_bool(name, value)
        elif name == MAX_ALLOWABLE_NUMA_NODES:
            if not _GO_ATOI.fullmatch(value):  # strconv.Atoi: ASCII digits, optional sign
                raise PolicyError(f"option {name!r}: {value!r} is not an integer")
            limit = int(value)
            if limit < DEFAULT_MAX_ALLOWABLE_NUMA_NODES:
                raise PolicyError(
                    f"option {name!r}: must not be less than {DEFAULT_MAX_ALLOWABLE_NUMA_NODES}"
                )
        else:
            raise PolicyError(f"unknown Topology Manager Policy option: {name!r}")
    return result


def new_policy(
    name: str, numa: NumaInfo, *, prefer_closest_numa_nodes: bool = False, max_numa_nodes: int = 8
) -> Policy:
    """The policy called ``name``. Raises :class:`PolicyError` for an unknown name, or
    (policy other than none) for more NUMA nodes than ``max_numa_nodes``."""
    if name == policy_none.NAME:
        return policy_none.NonePolicy()
    if len(numa.nodes) > max_numa_nodes:
        raise PolicyError(f"unsupported on machines with more than {max_numa_nodes} NUMA Nodes")
    if name == policy_best_effort.NAME:
        return policy_best_effort.BestEffortPolicy(numa, prefer_closest_numa_nodes)
    if name == policy_restricted.NAME:
        return policy_restricted.RestrictedPolicy(numa, prefer_closest_numa_nodes)
    if name == policy_single_numa_node.NAME:
        return policy_single_numa_node.SingleNumaNodePolicy(numa, prefer_closest_numa_nodes)
    raise PolicyError(f'unknown policy: "{name}"')
