"""numa-exporter: per-node NUMA placement exporter (kubelet podresources -> pod annotations)."""

__version__ = "0.1.0"
