"""A fake device plugin (device plugin API v1beta1) that advertises a node profile's
devices to a real kubelet: :mod:`.inventory` (pure) and :mod:`.server` (gRPC)."""
