"""Dynamic Resource Allocation on fake nodes: the objects a DRA driver publishes and the
claims the kubelet prepares."""
