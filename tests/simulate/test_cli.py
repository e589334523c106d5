"""``fakenrt simulate`` through click's runner: determinism, sweeps, traces, and inputs
beyond the documented bounds (one clear line, non-zero exit, no hang)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from fakenrt.cli import main
from fakenrt.simulate.limits import MAX_NODES, MAX_PODS, MAX_SWEEP_VALUES, MAX_TRACE_BYTES
from tests.simulate.builders import TWO_ZONES_SNN, pod

# A small generated day on the bundled nodes keeps these runs short.
SMALL = ["--duration", "2h", "--arrivals-per-hour", "20", "--jobs", "1", "--no-progress"]


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["simulate", *args])
    return result.exit_code, result.output


def test_same_seed_same_bytes_other_seed_other_run() -> None:
    first = invoke(*SMALL, "--json", "--seed", "7")
    second = invoke(*SMALL, "--json", "--seed", "7")
    other = invoke(*SMALL, "--json", "--seed", "8")
    assert first[0] == 0, first[1]
    assert first[1] == second[1]
    assert first[1] != other[1]
    doc = json.loads(first[1])
    assert doc["strategy_order"] == [
        "numa-blind",
        "nrt-trust",
        "nrt-reserve",
        "reconstruct-predicted",
        "reconstruct-observed",
        "oracle",
    ]
    assert doc["strategies"]["oracle"]["gpu_hours_ratio_to_oracle"] == 1.0
    assert doc["scenario"]["nodes"] == 16 and doc["scenario"]["gpus"] == 128
    # the bundled files by name: the JSON is the same wherever the package is installed
    assert doc["scenario"]["scenario"] == "bundled default.yaml"
    assert doc["scenario"]["profiles"] == "bundled cluster.yaml"


def test_parallel_runs_give_the_same_json() -> None:
    args = [
        *SMALL[:4],
        "--no-progress",
        "--json",
        "--strategy",
        "nrt-trust",
        "--strategy",
        "oracle",
    ]
    assert invoke(*args, "--jobs", "1")[1] == invoke(*args, "--jobs", "2")[1]


def test_sweep_runs_every_strategy_at_every_value(tmp_path: Path) -> None:
    report = tmp_path / "r.html"
    code, out = invoke(
        *SMALL,
        "--strategy",
        "nrt-trust",
        "--strategy",
        "reconstruct-observed",
        "--sweep",
        "nrt-delay=0,30s",
        "--report",
        str(report),
    )
    assert code == 0, out
    assert "TAE/1k by nrt-delay" in out
    html = report.read_text()
    assert 'data-chart="sweep-tae"' in html and 'data-chart="sweep-gpu-hours"' in html
    code, out = invoke(*SMALL, "--strategy", "oracle", "--sweep", "nrt-delay=0,30s", "--json")
    sweep = json.loads(out)["sweep"]
    assert sweep["parameter"] == "nrt-delay" and sweep["values"] == [0.0, 30.0]
    assert len(sweep["strategies"]["oracle"]["gpu_hours"]["mean"]) == 2


def _write_scenario(tmp_path: Path, trace_name: str) -> Path:
    (tmp_path / "nodes.yaml").write_text(TWO_ZONES_SNN)
    scenario = {"profiles": "nodes.yaml", "workload": {"trace": trace_name}}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    return path


def test_yaml_and_jsonl_traces_give_the_same_results(tmp_path: Path) -> None:
    entries = [
        {"at": "0s", "duration": "1h", "pod": pod("a", cpu=3)},
        {"at": 0, "duration": 3600, "pod": pod("b", cpu=3)},
        {"at": "0", "duration": "60m", "pod": pod("c", cpu=2)},
    ]
    (tmp_path / "t.yaml").write_text(yaml.safe_dump({"pods": entries}))
    (tmp_path / "t.jsonl").write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    outs = []
    for name in ("t.yaml", "t.jsonl"):
        path = _write_scenario(tmp_path, name)
        code, out = invoke("--scenario", str(path), "--json", "--jobs", "1", "--no-requeue")
        assert code == 0, out
        doc = json.loads(out)
        outs.append(doc["strategies"])
    assert outs[0] == outs[1]
    assert outs[0]["oracle"]["binds"] == 2 and outs[0]["numa-blind"]["binds"] == 3


@pytest.mark.parametrize(
    ("trace", "message"),
    [
        pytest.param("pods: 3\n", "pods must be a list", id="not-a-list"),
        pytest.param(
            "pods:\n- {at: 0, duration: 1h, pod: {metadata: {name: a}, spec: {}}}\n",
            "spec.containers must be a non-empty list",
            id="bad-pod",
        ),
        pytest.param(
            "pods:\n- {at: soon, duration: 1h, pod: {}}\n",
            "pods[0]: at: 'soon' is not",
            id="bad-at",
        ),
        pytest.param(
            "pods:\n- {at: 0, duration: 0, pod: {}}\n",
            "pods[0]: duration: must be > 0",
            id="zero-run",
        ),
        pytest.param(
            "pods:\n- {at: 99999999, duration: 1h, pod: {}}\n",
            "beyond the limit of 2592000s",
            id="beyond-30-days",
        ),
        pytest.param(
            f"pods:\n- {{at: 0, duration: 1h, count: {MAX_PODS + 1}, pod: {{}}}}\n",
            f"must be between 1 and {MAX_PODS}",
            id="count-too-large",
        ),
        pytest.param(
            "pods:\n- {at: 0, duration: 1h, pod: {}, colour: red}\n",
            "unknown field(s) colour",
            id="unknown-field",
        ),
    ],
)
def test_bad_traces_fail_with_one_clear_line(tmp_path: Path, *, trace: str, message: str) -> None:
    (tmp_path / "t.yaml").write_text(trace)
    code, out = invoke("--scenario", str(_write_scenario(tmp_path, "t.yaml")), "--jobs", "1")
    assert code != 0
    assert message in out, out
    assert out.startswith("Error: ") and out.count("\n") == 1


def test_huge_trace_is_refused_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "t.jsonl"
    with big.open("wb") as handle:
        handle.truncate(MAX_TRACE_BYTES + 1)  # sparse: nothing is written
    code, out = invoke("--scenario", str(_write_scenario(tmp_path, "t.jsonl")), "--jobs", "1")
    assert code != 0 and "beyond the limit" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--nrt-delay", "25h"], "nrt-delay must be between 0 and 86400", id="lag"),
        pytest.param(["--period", "1ms"], "period must be between 0.01", id="period"),
        pytest.param(["--duration", "800h"], "between 0.001 and 2592000", id="duration"),
        pytest.param(["--arrivals-per-hour", "1e9"], "beyond the limit", id="rate"),
        pytest.param(["--arrivals-per-hour", "-3"], "must be a positive number", id="rate-neg"),
        pytest.param(["--mix", "gaming"], "'gaming' is not one of", id="mix"),
        pytest.param(
            ["--sweep", "colour=1,2"], "NAME one of nrt-delay, nrt-jitter", id="sweep-name"
        ),
        pytest.param(
            ["--sweep", "nrt-delay=" + ",".join(["1"] * (MAX_SWEEP_VALUES + 1))],
            f"at most {MAX_SWEEP_VALUES} values",
            id="sweep-size",
        ),
        pytest.param(["--max-requeues", "1000"], "max-requeues must be between", id="requeues"),
        pytest.param(
            ["--period", "10ms", "--duration", "720h"], "the limit is 10000000", id="cycles"
        ),
        pytest.param(["--trace", "x", "--mix", "inference"], "does not exist", id="trace-missing"),
    ],
)
def test_out_of_bounds_options(*, args: list[str], message: str) -> None:
    code, out = invoke(*args, "--jobs", "1")
    assert code != 0
    assert message in out, out


def test_too_many_nodes(tmp_path: Path) -> None:
    (tmp_path / "nodes.yaml").write_text(TWO_ZONES_SNN)
    scenario = {
        "profiles": "nodes.yaml",
        "nodes": [{"profile": "n1", "count": 10**9}],
        "workload": {"generate": {"duration": "1h"}},
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario))
    code, out = invoke("--scenario", str(path), "--jobs", "1")
    assert code != 0 and f"more than {MAX_NODES} nodes" in out


def test_bundled_scenario_shows_the_difference_the_docs_explain() -> None:
    # A quarter of the bundled day: the NRT strategies already lose pods to stale NRT,
    # the reconstruction and the oracle lose none, numa-blind loses the most.
    code, out = invoke(
        "--duration", "6h", "--jobs", "2", "--no-progress", "--json",
        "--strategy", "numa-blind", "--strategy", "nrt-trust",
        "--strategy", "reconstruct-observed", "--strategy", "oracle",
    )  # fmt: skip
    assert code == 0, out
    s = json.loads(out)["strategies"]
    tae = {name: f["topology_affinity_errors_per_1000_binds"] for name, f in s.items()}
    assert tae["reconstruct-observed"] == 0 and tae["oracle"] == 0
    assert tae["nrt-trust"] > 0
    assert tae["numa-blind"] > tae["nrt-trust"]
    assert s["nrt-trust"]["stale_nrt_read_share"] > 0
