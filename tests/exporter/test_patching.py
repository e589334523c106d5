"""The patch body and the retry policy of the Patcher. The policy is driven by a
scripted writer raising the exporter's own error classes; the same paths against the
real API server (404, 409, new pod under the name, connection refused) are in
test_reconciler.py and test_daemon.py."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import pytest

from exporter.annotations import OBSERVED_MEMORY_GROUPS, OBSERVED_PLACEMENT
from exporter.kubeerrors import Forbidden, Transient
from exporter.patching import Patcher, PatchResult, build_patch, changes_for
from exporter.pods import PodView, pod_view

POD = PodView(namespace="ns", name="p", uid="u1", resource_version="7", phase="Running",
              placement_annotation="[]")  # fmt: skip


def test_patch_names_only_the_changes_and_carries_both_preconditions() -> None:
    desired = {OBSERVED_PLACEMENT: "[]", OBSERVED_MEMORY_GROUPS: "null"}
    changes = changes_for(POD, desired)
    assert changes == {OBSERVED_MEMORY_GROUPS: "null"}
    assert build_patch(POD, changes) == {
        "metadata": {
            "uid": "u1",
            "resourceVersion": "7",
            "annotations": {OBSERVED_MEMORY_GROUPS: "null"},
        }
    }
    assert changes_for(POD, {OBSERVED_PLACEMENT: None}) == {OBSERVED_PLACEMENT: None}


class ScriptedWriter:
    def __init__(self, answers: list[Exception | dict[str, Any]]) -> None:
        self.answers = answers
        self.patches = 0

    def get_pod(self, namespace: str, name: str) -> dict[str, Any]:
        raise AssertionError("not re-read in these cases")

    def merge_patch_pod(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        self.patches += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


OK = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "8"}}


@pytest.mark.parametrize(
    "answers,result,patches,sleeps",
    [
        pytest.param([OK], PatchResult.APPLIED, 1, 0, id="applied"),
        pytest.param(
            [Transient(429, "HTTP 429"), Transient(503, "HTTP 503"), OK],
            PatchResult.APPLIED, 3, 2, id="429-then-503-then-ok",
        ),
        pytest.param([Transient(0, "timeout")] * 4, PatchResult.FAILED, 4, 3, id="gives-up"),
        pytest.param([Forbidden(403, "HTTP 403")], PatchResult.REJECTED, 1, 0, id="forbidden"),
    ],
)  # fmt: skip
def test_retry_policy(
    answers: list[Exception | dict[str, Any]], result: PatchResult, patches: int, sleeps: int
) -> None:
    delays: list[float] = []
    writer = ScriptedWriter(answers)
    patcher = Patcher(writer, sleep=delays.append, rng=random.Random(3), base_delay_s=0.2)
    outcome = patcher.apply(POD, {OBSERVED_MEMORY_GROUPS: "[]"}, lambda v: None, pod_view)
    assert (outcome.result, writer.patches, len(delays)) == (result, patches, sleeps)
    # exponential with jitter: attempt n waits in [0.5, 1] x min(2 s, 0.2 s x 2^n)
    for n, delay in enumerate(delays):
        ceiling = min(2.0, 0.2 * 2**n)
        assert ceiling * 0.5 <= delay <= ceiling
