"""Real-kubelet nodes from profiles: the machine files, KubeletConfiguration and Kind
cluster that make a real kubelet (in a Kind node) see a profile node (docs/real-kubelet.md),
and the oracle comparing its verdicts and placements with the simulator's."""
