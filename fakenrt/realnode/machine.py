"""The machine files a real kubelet reads for its topology, generated from a profile node.
Pure: returns relative path -> content; writing them is :mod:`fakenrt.realnode.writing`.

kubelet v1.36 learns the machine through cAdvisor (v0.56), which reads (relative to the
node container's root; ``utils/sysinfo/sysinfo.go`` and ``utils/sysfs/sysfs.go``):

* ``sys/devices/system/node/node<N>/`` - one directory per NUMA node, with ``cpu<M>/
  topology/{core_id,physical_package_id}`` for each of its CPUs (a CPU without them is
  skipped), ``meminfo`` (only the ``MemTotal`` line), ``distance`` and ``hugepages/
  hugepages-<kB>kB/nr_hugepages``. On Linux ``node<N>/cpu<M>`` is a symlink into
  ``devices/system/cpu``; here it is a directory, because a symlink would resolve to the
  real machine's CPUs inside the node container. ``cpulist`` is written too (the exporter
  and other tools read it);
* ``sys/devices/system/cpu/`` - ``online`` (every CPU of the profile) and, per CPU,
  ``topology/`` and, when the profile gives uncore caches, ``cache/index3/`` (cAdvisor
  reads caches from ``/sys/devices/system/cpu/cpu<M>/cache``: the whole directory is
  replaced, so the real machine's caches do not leak into the profile's CPUs);
* ``proc/cpuinfo`` - ``physical id`` (the sockets the kubelet counts), ``core id`` and
  ``cpu MHz`` (required unless ``cpufreq`` says otherwise);
* ``proc/meminfo`` - ``MemTotal``, the Node's memory capacity;
* ``sys/kernel/mm/hugepages/hugepages-<kB>kB/nr_hugepages`` - the Node's hugepages.

Amounts: a NUMA node's ``MemTotal`` is what the kubelet's Memory Manager starts from
(``getDefaultMachineState`` in ``pkg/kubelet/cm/memorymanager/policy_static.go``:
allocatable memory = MemTotal - reservedMemory - the node's hugepages), so it is the
zone's ``memory`` plus its ``reservedMemory`` plus every hugepage of the zone; the pages of
a size are the zone's amount plus its reserved amount, divided by the page size. The
Node's ``MemTotal`` is the sum over the zones, as ``resources.node_capacity`` says.

Keys ending in ``/`` are empty directories.
"""

from __future__ import annotations

from exporter.cpulist import format_cpulist
from fakenrt.profiles.model import NodeProfile
from fakenrt.profiles.names import hugepage_size
from fakenrt.profiles.resources import zone_capacity

#: What ``/proc/cpuinfo`` says for ``cpu MHz`` (cAdvisor needs a clock speed).
CPU_MHZ = "2000.000"
#: The default hugepage size ``/proc/meminfo`` names (the x86 one).
DEFAULT_HUGEPAGE_KB = 2048

NODE_BASE = "sys/devices/system/node"
CPU_BASE = "sys/devices/system/cpu"
HUGEPAGES_BASE = "sys/kernel/mm/hugepages"
#: Where the files are mounted in the node container: relative path -> container path.
#: Directories and single files, each one bind mount (``kind.py``).
MOUNTS = (
    (NODE_BASE, "/sys/devices/system/node"),
    (CPU_BASE, "/sys/devices/system/cpu"),
    ("proc/cpuinfo", "/proc/cpuinfo"),
    ("proc/meminfo", "/proc/meminfo"),
    (HUGEPAGES_BASE, "/sys/kernel/mm/hugepages"),
)


class RenderError(ValueError):
    """The profile node cannot be carried to a real kubelet; the message names the node
    and the field."""


def _kib(amount: int, *, where: str) -> int:
    if amount % 1024:
        raise RenderError(
            f"{where}: {amount} bytes is not a whole number of KiB (meminfo counts kB)"
        )
    return amount // 1024


def _pages(profile: NodeProfile) -> dict[int, dict[int, int]]:
    """NUMA node id -> page size (bytes) -> number of pages (capacity: reserved included)."""
    out: dict[int, dict[int, int]] = {}
    for zone_id, amounts in zone_capacity(profile).items():
        sizes: dict[int, int] = {}
        for name, amount in amounts.items():
            size = hugepage_size(name)
            if size is None:
                continue
            if amount % size:
                raise RenderError(
                    f"node {profile.name}: zone {zone_id}: {name}: {amount} bytes is not a "
                    "whole number of pages"
                )
            sizes[size] = amount // size
        out[zone_id] = sizes
    return out


def numa_mem_total(profile: NodeProfile) -> dict[int, int]:
    """NUMA node id -> the bytes its ``meminfo`` ``MemTotal`` says."""
    capacity = zone_capacity(profile)
    pages = _pages(profile)
    return {
        zone_id: capacity[zone_id].get("memory", 0)
        + sum(size * count for size, count in pages[zone_id].items())
        for zone_id in capacity
    }


def machine_files(profile: NodeProfile) -> dict[str, str]:
    """Relative path -> content of every file (and ``dir/`` -> ``""`` for every empty
    directory) the node container gets. Raises RenderError for what a real machine cannot
    look like."""
    files: dict[str, str] = {}
    for zone in profile.zones:
        if any(zone.allocated.values()):
            # A real node holds exclusive resources only for pods that run there.
            raise RenderError(
                f"node {profile.name}: zone {zone.id}: allocated: a real kubelet cannot start "
                "with resources held by pods outside it; run such pods on the node instead"
            )
    ids = profile.zone_ids
    pages = _pages(profile)
    totals = numa_mem_total(profile)
    for zone in profile.zones:
        base = f"{NODE_BASE}/node{zone.id}"
        files[f"{base}/cpulist"] = format_cpulist(zone.cpus) + "\n"
        files[f"{base}/distance"] = " ".join(str(profile.distance(zone.id, o)) for o in ids) + "\n"
        kib = _kib(totals[zone.id], where=f"node {profile.name}: zone {zone.id}: memory")
        files[f"{base}/meminfo"] = (
            f"Node {zone.id} MemTotal:       {kib} kB\n"
            f"Node {zone.id} MemFree:        {kib} kB\n"
            f"Node {zone.id} MemUsed:        0 kB\n"
        )
        files[f"{base}/hugepages/"] = ""
        for size, count in sorted(pages[zone.id].items()):
            files[f"{base}/hugepages/hugepages-{size // 1024}kB/nr_hugepages"] = f"{count}\n"
        for cpu in sorted(zone.cpus):
            info = profile.cpu_topology[cpu]
            cpu_dir = f"{base}/cpu{cpu}"
            files[f"{cpu_dir}/topology/core_id"] = f"{info.core}\n"
            files[f"{cpu_dir}/topology/physical_package_id"] = f"{info.socket}\n"
    all_cpus = sorted(profile.cpu_topology)
    for name in ("online", "possible", "present"):
        files[f"{CPU_BASE}/{name}"] = format_cpulist(all_cpus) + "\n"
    siblings: dict[int, list[int]] = {}
    package: dict[int, list[int]] = {}
    for info in profile.cpu_topology.values():
        siblings.setdefault(info.core, []).append(info.cpu)
        package.setdefault(info.socket, []).append(info.cpu)
    for cpu in all_cpus:
        info = profile.cpu_topology[cpu]
        cpu_dir = f"{CPU_BASE}/cpu{cpu}"
        files[f"{cpu_dir}/topology/core_id"] = f"{info.core}\n"
        files[f"{cpu_dir}/topology/physical_package_id"] = f"{info.socket}\n"
        files[f"{cpu_dir}/topology/thread_siblings_list"] = (
            format_cpulist(siblings[info.core]) + "\n"
        )
        files[f"{cpu_dir}/topology/core_siblings_list"] = (
            format_cpulist(package[info.socket]) + "\n"
        )
        if info.uncore is not None:
            files.update(_uncore_cache(profile, cpu_dir, info.uncore))
    files[f"{NODE_BASE}/online"] = format_cpulist(ids) + "\n"
    files[f"{NODE_BASE}/possible"] = format_cpulist(ids) + "\n"
    files[f"{NODE_BASE}/has_cpu"] = format_cpulist(z.id for z in profile.zones if z.cpus) + "\n"
    files[f"{NODE_BASE}/has_memory"] = format_cpulist(ids) + "\n"
    files["proc/cpuinfo"] = "".join(
        f"processor\t: {cpu}\n"
        f"physical id\t: {profile.cpu_topology[cpu].socket}\n"
        f"core id\t\t: {profile.cpu_topology[cpu].core}\n"
        f"cpu MHz\t\t: {CPU_MHZ}\n\n"
        for cpu in all_cpus
    )
    total_kib = sum(totals.values()) // 1024
    machine_pages: dict[int, int] = {}
    for sizes in pages.values():
        for size, count in sizes.items():
            machine_pages[size] = machine_pages.get(size, 0) + count
    default_pages = machine_pages.get(DEFAULT_HUGEPAGE_KB * 1024, 0)
    files["proc/meminfo"] = (
        f"MemTotal:       {total_kib} kB\n"
        f"MemFree:        {total_kib} kB\n"
        f"MemAvailable:   {total_kib} kB\n"
        "SwapTotal:             0 kB\n"
        "SwapFree:              0 kB\n"
        f"HugePages_Total:   {default_pages}\n"
        f"HugePages_Free:    {default_pages}\n"
        f"Hugepagesize:       {DEFAULT_HUGEPAGE_KB} kB\n"
    )
    files[f"{HUGEPAGES_BASE}/"] = ""
    for size, count in sorted(machine_pages.items()):
        files[f"{HUGEPAGES_BASE}/hugepages-{size // 1024}kB/nr_hugepages"] = f"{count}\n"
    return files


def _uncore_cache(profile: NodeProfile, cpu_dir: str, uncore: int) -> dict[str, str]:
    """An L3 (``cache/index3``) shared by the CPUs of one uncore cache: the kubelet's
    ``getUncoreCacheID`` takes the cache id cAdvisor reads from ``id``."""
    sharing = [i.cpu for i in profile.cpu_topology.values() if i.uncore == uncore]
    base = f"{cpu_dir}/cache/index3"
    return {
        f"{base}/id": f"{uncore}\n",
        f"{base}/level": "3\n",
        f"{base}/type": "Unified\n",
        f"{base}/size": "32768K\n",
        f"{base}/shared_cpu_list": format_cpulist(sharing) + "\n",
        # cAdvisor counts the cache's CPUs from this mask (getCPUCount in utils/sysfs).
        f"{base}/shared_cpu_map": cpu_mask(sharing) + "\n",
    }


def cpu_mask(cpus: list[int]) -> str:
    """A Linux cpumask: hex words of 32 CPUs, most significant first, comma-separated."""
    value = 0
    for cpu in cpus:
        value |= 1 << cpu
    words = max(1, (max(cpus, default=0) // 32) + 1)
    return ",".join(f"{(value >> (32 * w)) & 0xFFFFFFFF:08x}" for w in reversed(range(words)))
