"""``fakenrt device-plugin``: a fake device plugin (API v1beta1) for a real kubelet.

It advertises a profile node's devices - each resource on its own socket in the kubelet's
device-plugins directory - with their NUMA nodes and health, answers
``GetPreferredAllocation`` deterministically, and runs until SIGTERM / SIGINT.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from exporter import stopsignals
from exporter.validation import quoted
from fakenrt.commands.kubelet import InputError, pick_node
from fakenrt.commands.params import Directory, Name, Number
from fakenrt.deviceplugin.inventory import plugin_devices, resources
from fakenrt.deviceplugin.server import DEFAULT_DIR, DevicePluginError, FakeDevicePlugin
from fakenrt.profiles import ProfileError, load_profiles
from fakenrt.profiles.names import extended_resource_problem


def build_plugins(
    *,
    profile_path: str,
    node: str | None,
    names: Sequence[str],
    plugin_dir: Path,
    register_timeout: float = 10.0,
) -> list[FakeDevicePlugin]:
    """One plugin per resource (every device resource of the node when ``names`` is
    empty). Raises InputError / DevicePluginError with a one-line message."""
    try:
        profiles = load_profiles(profile_path)
    except ProfileError as exc:
        raise InputError(str(exc)) from None
    profile = pick_node(profiles, node, source=profile_path)
    wanted = list(names) or list(resources(profile))
    if not wanted:
        raise InputError(f"{profile_path}: node {profile.name} has no devices to advertise")
    plugins = []
    for name in wanted:
        try:
            devices = plugin_devices(profile, name)
        except ValueError as exc:
            raise InputError(f"{profile_path}: {exc}") from None
        plugins.append(
            FakeDevicePlugin(
                name, devices, plugin_dir=plugin_dir, register_timeout=register_timeout
            )
        )
    return plugins


def run(
    *,
    profile_path: str,
    node: str | None,
    names: Sequence[str],
    plugin_dir: Path,
    register_timeout: float,
) -> None:
    plugins = build_plugins(
        profile_path=profile_path,
        node=node,
        names=names,
        plugin_dir=plugin_dir,
        register_timeout=register_timeout,
    )
    # SIGTERM / SIGINT blocked before the plugins' threads start, taken below with
    # sigwait (exporter.stopsignals: no Python handler, no thread sleeping through them)
    started: list[FakeDevicePlugin] = []
    with stopsignals.blocked():
        try:
            for plugin in plugins:
                plugin.start()
                started.append(plugin)
                click.echo(
                    f"serving {plugin.resource} on {plugin.socket_path} "
                    f"({len(plugin.devices())} devices), registered with {plugin.kubelet_socket}",
                    err=True,
                )
            stopsignals.wait()
        finally:
            for plugin in started:
                plugin.stop()


def _resources(
    ctx: click.Context, param: click.Parameter, names: tuple[str, ...]
) -> tuple[str, ...]:
    for name in names:
        problem = extended_resource_problem(name)
        if problem:
            raise click.BadParameter(f"{quoted(name)}: {problem}", ctx, param)
    return names


@click.command("device-plugin")
@click.option("--profile", "profile_path", required=True, help="Node profile file (YAML).")
@click.option(
    "--node", type=Name(), default=None, help="Node of the profile (needed when it has several)."
)
@click.option(
    "--resource",
    "names",
    multiple=True,
    callback=_resources,
    help="Device resource to advertise (repeatable; default: every device resource).",
)
@click.option(
    "--dir",
    "plugin_dir",
    type=Directory(relative=False, create=False),
    default=DEFAULT_DIR,
    show_default=True,
    help="The kubelet's device-plugins directory (holds kubelet.sock).",
)
@click.option(
    "--register-timeout",
    type=Number(minimum=0.1, maximum=3600),
    default=10.0,
    show_default=True,
    help="Seconds to wait for the kubelet's registration socket to answer.",
)
def device_plugin(
    *,
    profile_path: str,
    node: str | None,
    names: tuple[str, ...],
    plugin_dir: Path,
    register_timeout: float,
) -> None:
    """Advertise a profile node's devices to a real kubelet (device plugin API v1beta1)."""
    try:
        run(
            profile_path=profile_path,
            node=node,
            names=names,
            plugin_dir=plugin_dir,
            register_timeout=register_timeout,
        )
    except (InputError, DevicePluginError) as exc:
        raise click.ClickException(str(exc)) from None
