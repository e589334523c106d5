"""``kubelet explain --json`` carries everything the text shows (issue 11, item 9)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from fakenrt.cli import main
from fakenrt.examples import pods as example_pods
from fakenrt.profiles.loading import EXAMPLES_DIR

PODS = Path(example_pods.__file__).parent
REJECTED = """\
apiVersion: v1
kind: Pod
metadata: {name: too-wide, namespace: ml}
spec:
  containers:
  - name: main
    image: x
    resources:
      limits: {cpu: "40", memory: 64Gi, nvidia.com/gpu: 6}
"""


def _explain(*args: str) -> str:
    result = CliRunner().invoke(main, ["kubelet", "explain", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_json_carries_the_message_the_notes_and_the_reasons(tmp_path: Path) -> None:
    rejected = tmp_path / "rejected.yaml"
    rejected.write_text(REJECTED)
    args = [
        "--profile",
        str(EXAMPLES_DIR / "dgx.yaml"),
        "--node",
        "dgx-a",
        "--pod",
        str(PODS / "dgx-training.yaml"),
        "--pod",
        str(rejected),
    ]
    text = _explain(*args)
    data = json.loads(_explain(*args, "--json"))
    blocks = text.split("\n\n")
    assert len(blocks) == len(data)
    seen_note = seen_rejection = False
    for block, pod in zip(blocks, data, strict=True):
        header, *lines = block.splitlines()
        assert header.startswith(
            f"pod {pod['pod']} on node {pod['node']} ({pod['policy']}, {pod['scope']} scope): "
        )
        if pod["admit"]:
            assert header.endswith("ADMITTED")
        else:
            seen_rejection = True
            assert header.endswith(f"REJECTED {pod['reason']}: {pod['message']}")
        notes = [n for h in pod["hints"] for n in h["notes"]]
        whys = [h["why"] for h in pod["hints"]]
        assert [ln.strip().removeprefix("note: ") for ln in lines if "note: " in ln] == notes
        assert [ln.split(" - ", 1)[1] for ln in lines if "best hint" in ln] == whys
        seen_note = seen_note or bool(notes)
        kinds = [a["kind"] for a in pod["allocation"]]
        assert [ln.split("(", 1)[1].split(")")[0] for ln in lines if "): " in ln[:60]] == kinds
    assert seen_note
    assert seen_rejection
