"""The shipped alerting rules: valid for promtool, unit-tested alert by alert, and the
PrometheusRule carries exactly the plain rules file's groups."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.prometheus.tools import PROMETHEUS_RULE, RULE_TESTS, RULES_FILE

#: The conditions the exporter's operators are promised an alert for (docs/exporter.md).
ALERTS = {
    "NumaExporterDown",
    "NumaExporterReconcileStale",
    "NumaExporterPodresourcesErrors",
    "NumaExporterObservationLagHigh",
    "NumaExporterUnknownCPUs",
    "NumaExporterAnnotationPatchesFailing",
    "NumaExporterDRAPodMisaligned",
}


def _rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES_FILE.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def _promtool(prometheus_bin: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(prometheus_bin / "promtool"), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_promtool_check_rules(prometheus_bin: Path) -> None:
    proc = _promtool(prometheus_bin, "check", "rules", str(RULES_FILE))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in proc.stdout


def test_promtool_unit_tests_pass(prometheus_bin: Path) -> None:
    proc = _promtool(prometheus_bin, "test", "rules", str(RULE_TESTS))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_promtool_unit_tests_fail_for_a_wrong_rule(prometheus_bin: Path, tmp_path: Path) -> None:
    """The unit tests are sharp: the same tests against rules with one threshold moved
    (unknown CPUs alert only above 5) fail."""
    broken = RULES_FILE.read_text().replace(
        "numa_exporter_unknown_cpus > 0", "numa_exporter_unknown_cpus > 5"
    )
    assert broken != RULES_FILE.read_text()
    rules = tmp_path / "rules.yaml"
    rules.write_text(broken)
    tests = yaml.safe_load(RULE_TESTS.read_text())
    tests["rule_files"] = [str(rules)]
    test_file = tmp_path / "rules.test.yaml"
    test_file.write_text(yaml.safe_dump(tests))
    proc = _promtool(prometheus_bin, "test", "rules", str(test_file))
    assert proc.returncode != 0
    assert "NumaExporterUnknownCPUs" in proc.stdout + proc.stderr


def test_every_promised_alert_is_shipped_and_unit_tested() -> None:
    shipped = {rule["alert"] for rule in _rules() if "alert" in rule}
    assert shipped == ALERTS
    fires: set[str] = set()
    quiet: set[str] = set()
    for case in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for check in case.get("alert_rule_test") or []:
            (fires if check["exp_alerts"] else quiet).add(check["alertname"])
    assert fires == ALERTS
    assert quiet == ALERTS


def test_every_alert_has_severity_summary_and_description() -> None:
    for rule in _rules():
        assert rule["labels"]["severity"] in {"warning", "critical"}, rule["alert"]
        assert {"summary", "description"} <= set(rule["annotations"]), rule["alert"]
        assert "for" in rule, rule["alert"]


def test_prometheus_rule_carries_the_rules_file() -> None:
    prometheus_rule = yaml.safe_load(PROMETHEUS_RULE.read_text())
    assert prometheus_rule["kind"] == "PrometheusRule"
    assert prometheus_rule["spec"] == yaml.safe_load(RULES_FILE.read_text())
