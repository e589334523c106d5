"""``fakenrt dra-plugin``: a fake DRA kubelet plugin for a real kubelet.

For each DRA driver of a profile node it writes the driver's CDI spec, publishes the
node's ResourceSlices of the driver, serves the DRA kubelet plugin API v1 and the plugin
registration API v1 in the kubelet's plugin directories, waits for the kubelet to
register it, and runs until SIGTERM / SIGINT (docs/real-kubelet.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from exporter import stopsignals
from fakenrt.commands.kubeaccess import kube_client
from fakenrt.commands.kubelet import InputError, pick_node
from fakenrt.commands.params import Directory, Name, Number
from fakenrt.draplugin.server import (
    DEFAULT_PLUGINS_DIR,
    DEFAULT_REGISTRY_DIR,
    ClaimReadError,
    DraPluginError,
    FakeDraPlugin,
)
from fakenrt.profiles import ProfileError, load_profiles
from fakenrt.profiles.model import NodeProfile

if TYPE_CHECKING:
    from exporter.kubeclient import KubeClient
    from fakenrt.dra.claims import ResourceClaim

DEFAULT_CDI_DIR = Path("/var/run/cdi")
#: The label on the ResourceSlices the plugin writes.
MANAGED_BY = {"app.kubernetes.io/managed-by": "fakenrt-dra-plugin"}


@dataclass(frozen=True)
class Options:
    profile_path: str
    node: str | None
    node_name: str | None
    drivers: Sequence[str]
    plugins_dir: Path
    registry_dir: Path
    cdi_dir: Path
    register_timeout: float
    publish: bool


def node_profile(options: Options) -> NodeProfile:
    """The profile node as published on the Kubernetes node (``--node-name``, else
    ``$NODE_NAME``, else the profile node's name), its drivers narrowed to
    ``--driver``. Raises InputError."""
    from fakenrt.dra.slices import on_node

    try:
        profiles = load_profiles(options.profile_path)
    except ProfileError as exc:
        raise InputError(str(exc)) from None
    profile = pick_node(profiles, options.node, source=options.profile_path)
    if not profile.dra:
        raise InputError(f"{options.profile_path}: node {profile.name} has no DRA drivers")
    known = [d.name for d in profile.dra]
    for name in options.drivers:
        if name not in known:
            raise InputError(
                f"{options.profile_path}: node {profile.name} has no DRA driver {name!r} "
                f"(it has: {', '.join(known)})"
            )
    wanted = tuple(d for d in profile.dra if not options.drivers or d.name in options.drivers)
    name = options.node_name or os.environ.get("NODE_NAME") or profile.name
    return on_node(replace(profile, dra=wanted), name)


def _write_cdi(directory: Path, name: str, body: object) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / name
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.")
    with os.fdopen(fd, "w") as out:
        json.dump(body, out, indent=2)
    os.chmod(tmp, 0o644)
    os.replace(tmp, target)
    return target


def claim_reader(kube: KubeClient) -> Callable[[str, str], ResourceClaim]:
    from exporter.kubeclient import path
    from exporter.kubeerrors import ApiError
    from fakenrt.dra.claims import ClaimSpecError, claim_from_manifest

    def read(namespace: str, name: str) -> ResourceClaim:
        where = path(
            "apis", "resource.k8s.io", "v1", "namespaces", namespace, "resourceclaims", name
        )
        try:
            return claim_from_manifest(kube.get(where), source="api")
        except (ApiError, ClaimSpecError) as exc:
            raise ClaimReadError(f"claim {namespace}/{name}: {exc}") from exc

    return read


def publish(kube: KubeClient, profile: NodeProfile) -> list[str]:
    """The node's ResourceSlices of the plugin's drivers (a plugin started for some
    drivers leaves the slices of the others, written by another instance, alone)."""
    from exporter.kubeclient import path
    from fakenrt.controller.draobjects import publish_slices

    node = kube.get(path("api", "v1", "nodes", profile.name))
    return publish_slices(
        kube,
        profile,
        node_uid=str(node["metadata"]["uid"]),
        labels=MANAGED_BY,
        drivers={d.name for d in profile.dra},
    )


def run(options: Options, kube: KubeClient) -> None:
    from exporter.kubeerrors import ApiError
    from fakenrt.draplugin.cdi import cdi_spec, spec_file_name

    profile = node_profile(options)
    plugins = [
        FakeDraPlugin(
            driver,
            node=profile.name,
            read_claim=claim_reader(kube),
            plugins_dir=options.plugins_dir,
            registry_dir=options.registry_dir,
        )
        for driver in profile.dra
    ]
    written: list[Path] = []
    started: list[FakeDraPlugin] = []
    with stopsignals.blocked():
        try:
            for driver in profile.dra:
                written.append(
                    _write_cdi(options.cdi_dir, spec_file_name(driver.name), cdi_spec(driver))
                )
            if options.publish:
                try:
                    slices = publish(kube, profile)
                except ApiError as exc:
                    raise DraPluginError(f"cannot publish ResourceSlices: {exc}") from exc
                click.echo(
                    f"published {len(slices)} ResourceSlice(s) of node {profile.name}", err=True
                )
            for plugin in plugins:
                plugin.start()
                started.append(plugin)
            for plugin in started:
                if not plugin.wait_registered(options.register_timeout):
                    why = plugin.registration_error or "no kubelet registered it"
                    raise DraPluginError(
                        f"{plugin.driver.name}: not registered within "
                        f"{options.register_timeout:g}s ({plugin.registration}): {why}"
                    )
                click.echo(
                    f"serving {plugin.driver.name} ({len(plugin.driver.devices)} devices) on "
                    f"{plugin.endpoint}, registered with the kubelet",
                    err=True,
                )
            stopsignals.wait()
        finally:
            for plugin in started:
                plugin.stop()
            for path in written:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()


@click.command("dra-plugin")
@click.option("--profile", "profile_path", required=True, help="Node profile file (YAML).")
@click.option(
    "--node", type=Name(), default=None, help="Node of the profile (needed when it has several)."
)
@click.option(
    "--node-name",
    type=Name(),
    default=None,
    help="The Kubernetes node the plugin runs on (default: $NODE_NAME, else the profile node).",
)
@click.option(
    "--driver",
    "drivers",
    type=Name(),
    multiple=True,
    help="DRA driver to serve (repeatable; default: every DRA driver of the node).",
)
@click.option(
    "--plugins-dir",
    type=Directory(relative=False),
    default=DEFAULT_PLUGINS_DIR,
    show_default=True,
    help="Where each driver serves <driver>/dra.sock.",
)
@click.option(
    "--registry-dir",
    type=Directory(relative=False),
    default=DEFAULT_REGISTRY_DIR,
    show_default=True,
    help="The kubelet's plugin registry directory (<driver>-reg.sock).",
)
@click.option(
    "--cdi-dir",
    type=Directory(relative=False),
    default=DEFAULT_CDI_DIR,
    show_default=True,
    help="Where the drivers' CDI specs are written.",
)
@click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Kubeconfig (default: $KUBECONFIG, in-cluster config, ~/.kube/config).",
)
@click.option(
    "--register-timeout",
    type=Number(minimum=0.1, maximum=3600),
    default=60.0,
    show_default=True,
    help="Seconds to wait for the kubelet to register every driver.",
)
@click.option(
    "--publish/--no-publish",
    default=True,
    show_default=True,
    help="Publish the node's ResourceSlices of the drivers.",
)
def dra_plugin(
    *,
    profile_path: str,
    node: str | None,
    node_name: str | None,
    drivers: tuple[str, ...],
    plugins_dir: Path,
    registry_dir: Path,
    cdi_dir: Path,
    kubeconfig: Path | None,
    register_timeout: float,
    publish: bool,
) -> None:
    """Serve a profile node's DRA drivers to a real kubelet (DRA kubelet plugin API v1)."""
    options = Options(
        profile_path=profile_path,
        node=node,
        node_name=node_name,
        drivers=drivers,
        plugins_dir=plugins_dir,
        registry_dir=registry_dir,
        cdi_dir=cdi_dir,
        register_timeout=register_timeout,
        publish=publish,
    )
    kube = kube_client(kubeconfig, component="fakenrt-dra-plugin")
    try:
        run(options, kube)
    except (InputError, DraPluginError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        kube.close()
