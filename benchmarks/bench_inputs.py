"""What reading a hostile-size input costs (issue 21, item 4): YAML through PyYAML's
pure-Python loader (what fakenrt used) and through fakenrt.yamltext (libyaml's C parser,
bounded), and the real command refusing an 88,000-node profile.

Prints, for profiles of N nodes (one line each, like the issue's 88,000-node file):
size, CPU seconds and throughput of the pure-Python safe loader, of yamltext's full load,
and of yamltext's size check alone; then ``fakenrt kubelet explain`` on the 88,000-node
profile as a process (CPU and peak RSS from its rusage).

Run: .venv/bin/python benchmarks/bench_inputs.py [--nodes 2000,20000]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fakenrt.yamltext import MAX_VALUES, YamlError, _check_size, load_one

POD = """\
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ml}
spec:
  containers:
  - {name: c, image: x, resources: {limits: {cpu: "1", memory: 1Gi}}}
"""


def profile(nodes: int) -> str:
    return "nodes:\n" + "".join(
        f"- {{name: n{i}, shape: {{numaNodes: 2, coresPerNumaNode: 4, memoryPerNumaNode: 4Gi}}}}\n"
        for i in range(nodes)
    )


def cpu(action: object) -> float:
    start = time.process_time()
    with contextlib.suppress(YamlError):
        action()  # type: ignore[operator]
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="2000,20000", help="profile sizes, comma-separated")
    args = parser.parse_args()
    print(f"yamltext bound: {MAX_VALUES} values per file")
    print(f"{'nodes':>7} {'MB':>6} {'pure s':>8} {'pure MB/s':>9} {'C s':>7} {'C MB/s':>7} "
          f"{'check s':>8}")  # fmt: skip
    for nodes in (int(n) for n in args.nodes.split(",")):
        text = profile(nodes)
        mb = len(text) / 1e6
        pure = cpu(lambda t=text: yaml.load(t, Loader=yaml.SafeLoader))
        full = cpu(lambda t=text: load_one(t, max_values=10**9))
        check = cpu(lambda t=text: _check_size(t, 10**9))
        print(
            f"{nodes:>7} {mb:>6.2f} {pure:>8.2f} {mb / pure:>9.2f} {full:>7.2f} "
            f"{mb / full:>7.2f} {check:>8.2f}"
        )
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "88000.yaml"
        big.write_text(profile(88_000))
        pod = Path(tmp) / "pod.yaml"
        pod.write_text(POD)
        fakenrt = Path(sys.prefix) / "bin" / "fakenrt"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(
            [str(fakenrt), "kubelet", "explain", "--profile", str(big), "--pod", str(pod)],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ},
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        print(
            f"fakenrt kubelet explain, 88,000-node profile ({big.stat().st_size / 1e6:.1f} MB): "
            f"exit {done.returncode}, {used:.2f} s CPU, peak RSS {after.ru_maxrss / 1024:.0f} MiB"
        )
        print(f"  {done.stderr.strip()}")


if __name__ == "__main__":
    main()
