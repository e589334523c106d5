"""The one way fakenrt's commands build a Kubernetes client from ``--kubeconfig``, with
configuration and TLS problems turned into a clear command error."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from exporter.kubeclient import KubeClient


def kube_client(kubeconfig: Path | None, *, component: str, **client_options: Any) -> KubeClient:
    """A :class:`KubeClient` for ``kubeconfig`` (None: the in-cluster / default
    configuration), with user agent ``<component>/<version>``; ``client_options`` go to
    the client (timeouts, pool size). Raises click.ClickException naming the file."""
    import ssl

    from exporter.kubeclient import KubeClient
    from exporter.kubesettings import KubeconfigError, default_config, from_kubeconfig
    from exporter.kubetoken import CredentialError
    from fakenrt import __version__

    where = str(kubeconfig) if kubeconfig is not None else "default Kubernetes configuration"
    try:
        # bounded: a kubeconfig or a file it names that is /dev/zero, huge, binary or not
        # YAML is refused here, in one line naming it
        config = default_config() if kubeconfig is None else from_kubeconfig(kubeconfig)
        kube = KubeClient(config, user_agent=f"{component}/{__version__}", **client_options)
        kube.check_credentials()  # the token file read, the exec plugin run: bounded
        return kube
    except (KubeconfigError, CredentialError) as exc:
        detail = " ".join(str(exc).split())  # YAML errors span lines
        raise click.ClickException(f"cannot load a Kubernetes configuration: {detail}") from None
    except (OSError, ssl.SSLError) as exc:
        raise click.ClickException(f"{where}: cannot load the TLS settings: {exc}") from None
