"""fakenrt: NUMA nodes without NUMA hardware - profiles, a faithful kubelet Topology
Manager simulator, fake NRT nodes and podresources sockets, and a reference scheduler."""

__version__ = "0.1.0"
