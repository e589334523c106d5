"""``fakenrt scheduler``: the reference NUMA scheduler plugin, once (``evaluate``) or as a
scheduler for a cluster (``run``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
import yaml

from exporter.quantities import QuantityError
from fakenrt.podspec import PodSpecError
from fakenrt.scheduler.args import ArgsError, PluginArgs, parse_args
from fakenrt.scheduler.nrt import NRTError
from fakenrt.scheduler.oneshot import evaluate_on_node
from fakenrt.scheduler.reconstruction import ReconstructionError


def _load_documents(path: Path) -> list[Any]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise click.ClickException(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise click.ClickException(f"{path}: not valid YAML: {exc}") from None


def _load_one(path: Path, what: str) -> Mapping[str, Any]:
    docs = _load_documents(path)
    if len(docs) != 1 or not isinstance(docs[0], Mapping):
        raise click.ClickException(f"{path}: expected exactly one {what} mapping")
    return docs[0]


def _pods_on_node(path: Path) -> list[tuple[str, Mapping[str, Any]]]:
    out: list[tuple[str, Mapping[str, Any]]] = []
    for i, doc in enumerate(_load_documents(path)):
        if isinstance(doc, Mapping) and doc.get("kind") in ("PodList", "List"):
            for j, item in enumerate(doc.get("items") or []):
                out.append((f"{path}[{i}].items[{j}]", item))
        else:
            out.append((f"{path}[{i}]", doc))
    return out


@click.group("scheduler")
def scheduler() -> None:
    """The reference NUMA-aware scheduler: the plugin and a scheduler loop."""


@scheduler.command("evaluate")
@click.option(
    "--nrt",
    "nrt_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The node's NodeResourceTopology object (YAML).",
)
@click.option(
    "--pod",
    "pod_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The Pod manifest to place (YAML).",
)
@click.option(
    "--pods-on-node",
    "pods_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Multi-document YAML of the Pods already on the node, with their placement "
    "annotations (used to reconstruct free capacity; terminal pods count for nothing). "
    "Default: the node has no pods.",
)
@click.option(
    "--args",
    "args_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Plugin arguments (YAML mapping): ignoreList, reconstructAvailable, scoringStrategy.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def evaluate(
    nrt_path: Path,
    pod_path: Path,
    pods_path: Path | None,
    args_path: Path | None,
    as_json: bool,
) -> None:
    """Would the kubelet admit POD on the node NRT describes? Print the verdict, the zones
    the reservation would charge and every score.

    Exit status 0 whether or not the pod fits; non-zero for invalid input.
    """
    nrt_obj = _load_one(nrt_path, "NodeResourceTopology")
    pod_obj = _load_one(pod_path, "Pod")
    pods = _pods_on_node(pods_path) if pods_path is not None else []
    args = PluginArgs()
    if args_path is not None:
        docs = _load_documents(args_path)
        if len(docs) > 1:
            raise click.ClickException(f"{args_path}: expected one YAML mapping")
        try:
            args = parse_args(docs[0] if docs else None, source=str(args_path))
        except ArgsError as exc:
            raise click.ClickException(str(exc)) from None
    try:
        result = evaluate_on_node(
            nrt_obj,
            pod_obj,
            pods,
            args,
            nrt_source=str(nrt_path),
            pod_source=str(pod_path),
        )
    except (NRTError, PodSpecError, QuantityError) as exc:
        raise click.ClickException(str(exc)) from None
    except ReconstructionError as exc:
        raise click.ClickException(f"{pods_path}: {exc}") from None
    if as_json:
        click.echo(json.dumps(result.as_json()))
        return
    verdict = "fits" if result.fit else "does not fit"
    click.echo(f"{verdict}: {result.reason}" if result.reason else verdict)
    click.echo(f"zones: {', '.join(result.zones) if result.zones else '-'}")
    for name, value in result.scores.values.items():
        click.echo(f"score {name}: {value}")
    for key in result.unplaced:
        click.echo(f"note: pod {key} has no placement annotation; not counted", err=True)
