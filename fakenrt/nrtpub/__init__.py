"""``fakenrt nrt publish``: the NodeResourceTopology of a node run by a real kubelet,
published from its podresources API, sysfs and kubelet configuration (docs/nrt.md)."""
