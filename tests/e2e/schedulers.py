"""The scheduler under test: how to start it, the name its pods carry, and what its
"this pod cannot be aligned" events say.

By default the suite drives the reference scheduler (``fakenrt scheduler run``) in each of
its modes; ``--scheduler-name`` / ``--scheduler-command`` / ``--scheduler-reason`` replace
it with any scheduler a user starts from a command line (docs/e2e.md).
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

#: The placeholders a scheduler command may use; the deployment fills them in.
PLACEHOLDERS = ("kubeconfig", "scheduler_name", "node_selector", "workdir")
#: What the reference plugin's FailedScheduling message names when it refuses a node for
#: NUMA reasons: the Topology Manager policy, or the Memory Manager.
REFERENCE_REASON = r"single-numa-node|restricted|memory manager"
#: ``fakenrt`` with this interpreter (the project's virtualenv).
FAKENRT = f"{shlex.quote(sys.executable)} -c 'from fakenrt.cli import main; main()'"


@dataclass(frozen=True, kw_only=True)
class SchedulerUnderTest:
    """One scheduler to run the scenarios against."""

    #: Short id shown in test ids and figures.
    id: str
    #: The ``spec.schedulerName`` of the test pods.
    name: str
    #: The command line, with ``{kubeconfig}``, ``{scheduler_name}``, ``{node_selector}``
    #: (``fakenrt.io/controller=<deployment>``: only the deployment's fake nodes) and
    #: ``{workdir}`` (where ``files`` are written) filled in.
    command: str
    #: Regular expression a FailedScheduling event message matches when the scheduler
    #: leaves a pod Pending because no node can align it.
    reason: str
    #: Files to write into the work directory before starting (name -> content).
    files: Mapping[str, str] = field(default_factory=dict)
    #: Whether the scheduler is known to trust a lagging NRT (scenario d then expects
    #: TopologyAffinityErrors instead of none).
    trusts_stale_nrt: bool = False
    #: For the reference scheduler only: its plugin arguments (``args.yaml``). An
    #: in-cluster backend then runs the harness's scheduler Deployment with them instead
    #: of ``command``; ``None`` (any other scheduler) means ``command`` runs as a process.
    in_cluster_args: str | None = None

    def argv(self, *, kubeconfig: Path, node_selector: str, workdir: Path) -> list[str]:
        """The command's arguments with the placeholders filled in (each argument is
        formatted on its own, so paths with spaces stay one argument)."""
        values = {
            "kubeconfig": str(kubeconfig),
            "scheduler_name": self.name,
            "node_selector": node_selector,
            "workdir": str(workdir),
        }
        try:
            return [part.format(**values) for part in shlex.split(self.command)]
        except (KeyError, IndexError, ValueError) as exc:
            raise pytest.UsageError(
                f"--scheduler-command {self.command!r}: bad placeholder {exc}; "
                f"use {', '.join('{' + p + '}' for p in PLACEHOLDERS)}"
            ) from None


_REFERENCE_RUN = (
    f"{FAKENRT} scheduler run --kubeconfig {{kubeconfig}} --scheduler-name {{scheduler_name}}"
    " --node-selector {node_selector} --period 0.5"
)

#: Plugin arguments of the reference scheduler's stale-NRT mode.
_STALE_NRT_ARGS = "reconstructAvailable: false\n"

#: The reference scheduler reconstructing zone use from observed (else predicted)
#: placements - its default.
RECONSTRUCTION = SchedulerUnderTest(
    id="reference-reconstruction",
    name="numa-reference",
    command=_REFERENCE_RUN,
    reason=REFERENCE_REASON,
    in_cluster_args="{}\n",
)
#: The reference scheduler trusting NRT ``available`` as published, however old.
STALE_NRT = SchedulerUnderTest(
    id="reference-stale-nrt",
    name="numa-reference-stale",
    command=_REFERENCE_RUN + " --args {workdir}/stale-nrt.yaml",
    reason=REFERENCE_REASON,
    files={"stale-nrt.yaml": _STALE_NRT_ARGS},
    trusts_stale_nrt=True,
    in_cluster_args=_STALE_NRT_ARGS,
)
REFERENCE_MODES = (RECONSTRUCTION, STALE_NRT)


def add_options(parser: pytest.Parser) -> None:
    """The e2e suite's command-line options (registered by tests/conftest.py)."""
    group = parser.getgroup("e2e", "end-to-end scenarios (tests/e2e, docs/e2e.md)")
    group.addoption(
        "--scheduler-name",
        default=None,
        help="spec.schedulerName of the e2e test pods; with --scheduler-command, the "
        "scheduler under test (default: the reference scheduler in each of its modes).",
    )
    group.addoption(
        "--scheduler-command",
        default=None,
        help="Command line starting the scheduler under test; placeholders "
        "{kubeconfig}, {scheduler_name}, {node_selector}, {workdir}.",
    )
    group.addoption(
        "--scheduler-reason",
        default=r"(?i)numa|topology|align",
        help="Regex a FailedScheduling message of the scheduler under test matches when "
        "it leaves a pod Pending because no node can align it.",
    )


def from_options(
    *, name: str | None, command: str | None, reason: str
) -> SchedulerUnderTest | None:
    """The user's scheduler from the three options, or None when neither name nor command
    is given (the reference modes run). Raises pytest.UsageError for one without the
    other, an empty one or a reason that is not a regular expression."""
    if name is None and command is None:
        return None
    if not name or not command:
        raise pytest.UsageError("--scheduler-name and --scheduler-command go together")
    try:
        re.compile(reason)
    except re.error as exc:
        raise pytest.UsageError(f"--scheduler-reason {reason!r}: {exc}") from None
    scheduler = SchedulerUnderTest(id=f"custom-{name}", name=name, command=command, reason=reason)
    scheduler.argv(kubeconfig=Path("k"), node_selector="s", workdir=Path("w"))  # placeholders
    return scheduler
