"""promtool and prometheus for the tests: Debian's prometheus package, installed by
tests/prometheus/install.sh when missing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ALERTS = REPO / "manifests" / "exporter" / "alerts"
RULES_FILE = ALERTS / "numa-exporter.rules.yaml"
PROMETHEUS_RULE = ALERTS / "prometheusrule.yaml"
RULE_TESTS = HERE / "rules.test.yaml"


def prometheus_bin_dir() -> Path:
    """$NUMA_TESTKIT_PROMETHEUS_BIN, or the directory install.sh reports."""
    given = os.environ.get("NUMA_TESTKIT_PROMETHEUS_BIN")
    if given:
        path = Path(given)
    else:
        proc = subprocess.run(
            [str(HERE / "install.sh")], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise RuntimeError(f"install.sh failed (exit {proc.returncode}):\n{proc.stderr}")
        path = Path(proc.stdout.strip().splitlines()[-1])
    for name in ("promtool", "prometheus"):
        if not os.access(path / name, os.X_OK):
            raise RuntimeError(f"{path / name} is missing or not executable")
    return path
