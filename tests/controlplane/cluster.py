"""A real etcd + kube-apiserver + kube-controller-manager on loopback, for the test suite.

``ControlPlane.start()`` picks free ports, generates a CA, a serving certificate, a
service-account signing key, a client certificate for the controller-manager and a static
admin token in a temporary directory, starts etcd and kube-apiserver (RBAC authorization,
default admission plugins), waits until ``/readyz`` answers and writes a kubeconfig, then
starts kube-controller-manager - the controllers a real cluster runs and schedulers rely
on (namespaces, service accounts and their tokens, the root CA ConfigMap in every
namespace, garbage collection, pod GC, node lifecycle, workloads...) - and waits until it
has published ``kube-root-ca.crt`` and made the ``default`` ServiceAccount in
``default``. ``stop()`` terminates the process groups and removes the directory.
Binaries come from ``build.sh`` beside this file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ADMIN_TOKEN_USER = "numa-testkit-admin"
READY_TIMEOUT_S = 120.0
#: The controller-manager's identity: the user the bootstrap RBAC policy binds
#: ``system:kube-controller-manager`` to (each controller then acts as its own
#: ServiceAccount in kube-system: --use-service-account-credentials).
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
#: The binaries build.sh makes.
BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd")


class ControlPlaneError(RuntimeError):
    """The control plane could not be built or started; the message carries its logs."""


def binaries_dir() -> Path:
    """The directory with kube-apiserver, kube-controller-manager, kube-scheduler and etcd:
    $NUMA_TESTKIT_CONTROLPLANE_BIN, or the output of build.sh (which builds on first use
    and reuses its cache afterwards)."""
    given = os.environ.get("NUMA_TESTKIT_CONTROLPLANE_BIN")
    if given:
        path = Path(given)
    else:
        proc = subprocess.run([str(HERE / "build.sh")], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ControlPlaneError(
                f"building the control plane failed (exit {proc.returncode}):\n"
                + proc.stderr[-4000:]
            )
        path = Path(proc.stdout.strip().splitlines()[-1])
    for name in BINARIES:
        if not os.access(path / name, os.X_OK):
            raise ControlPlaneError(f"{path / name} is missing or not executable")
    return path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _openssl(*args: str, cwd: Path) -> None:
    proc = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ControlPlaneError(f"openssl {' '.join(args[:2])} failed: {proc.stderr}")


def _make_certs(pki: Path) -> None:
    pki.mkdir(parents=True)
    _openssl("genrsa", "-out", "ca.key", "2048", cwd=pki)
    _openssl(
        "req", "-x509", "-new", "-key", "ca.key", "-days", "2", "-subj", "/CN=numa-testkit-ca",
        "-out", "ca.crt", cwd=pki,
    )  # fmt: skip
    _openssl("genrsa", "-out", "server.key", "2048", cwd=pki)
    (pki / "san.cnf").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n"
        "extendedKeyUsage=serverAuth\n"
    )
    _openssl(
        "req", "-new", "-key", "server.key", "-subj", "/CN=kube-apiserver", "-out", "server.csr",
        cwd=pki,
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "2", "-extfile", "san.cnf", "-out", "server.crt", cwd=pki,
    )  # fmt: skip
    _openssl("genrsa", "-out", "sa.key", "2048", cwd=pki)
    _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)
    _client_cert(pki, "controller-manager", CONTROLLER_MANAGER_USER)


def _client_cert(pki: Path, name: str, user: str) -> None:
    """``<name>.crt`` / ``<name>.key``: a client certificate for ``user`` signed by the CA."""
    _openssl("genrsa", "-out", f"{name}.key", "2048", cwd=pki)
    (pki / f"{name}.cnf").write_text("extendedKeyUsage=clientAuth\n")
    _openssl(
        "req", "-new", "-key", f"{name}.key", "-subj", f"/CN={user}", "-out", f"{name}.csr",
        cwd=pki,
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "2", "-extfile", f"{name}.cnf", "-out", f"{name}.crt",
        cwd=pki,
    )  # fmt: skip


@dataclass
class ControlPlane:
    """One etcd + kube-apiserver + kube-controller-manager. Use ``start()``/``stop()`` or
    as a context manager."""

    bin_dir: Path
    #: Extra kube-controller-manager flags (a later flag wins), e.g. a short
    #: ``--node-monitor-grace-period`` for a test.
    controller_manager_args: tuple[str, ...] = ()
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="numa-testkit-cp-")))
    admin_token: str = field(default_factory=lambda: os.urandom(16).hex())
    etcd_port: int = 0
    apiserver_port: int = 0
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    @property
    def ca_file(self) -> Path:
        return self.workdir / "pki" / "ca.crt"

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig"

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        log = (self.workdir / f"{name}.log").open("wb")
        proc = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir, start_new_session=True
        )
        log.close()
        self._procs.append(proc)
        return proc

    def log_tail(self, name: str, chars: int = 4000) -> str:
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else "(no log)"

    def start(self) -> None:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        pki = self.workdir / "pki"
        _make_certs(pki)
        (self.workdir / "tokens.csv").write_text(
            f'{self.admin_token},{ADMIN_TOKEN_USER},{ADMIN_TOKEN_USER},"system:masters"\n'
        )
        self.etcd_port, peer_port, self.apiserver_port = _free_port(), _free_port(), _free_port()
        etcd_url = f"http://127.0.0.1:{self.etcd_port}"
        peer_url = f"http://127.0.0.1:{peer_port}"
        etcd = self._spawn(
            "etcd",
            [
                str(self.bin_dir / "etcd"),
                "--name=default",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=default={peer_url}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )
        self._wait_http(f"{etcd_url}/health", etcd, "etcd", ssl_ctx=None)
        apiserver = self._spawn(
            "kube-apiserver",
            [
                str(self.bin_dir / "kube-apiserver"),
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.apiserver_port}",
                f"--cert-dir={self.workdir / 'apiserver-certs'}",
                f"--tls-cert-file={pki / 'server.crt'}",
                f"--tls-private-key-file={pki / 'server.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                f"--token-auth-file={self.workdir / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--service-cluster-ip-range=10.96.0.0/24",
                "--allow-privileged=true",
                "--v=1",
            ],
        )
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        self._wait_http(f"{self.server}/readyz", apiserver, "kube-apiserver", ssl_ctx=ctx)
        self._write_kubeconfig()
        self._start_controller_manager(pki)

    def _start_controller_manager(self, pki: Path) -> None:
        kubeconfig = self.workdir / "controller-manager.kubeconfig"
        kubeconfig.write_text(
            self._kubeconfig_text(
                "controller-manager",
                f"    client-certificate: {pki / 'controller-manager.crt'}\n"
                f"    client-key: {pki / 'controller-manager.key'}\n",
            )
        )
        manager = self._spawn(
            "kube-controller-manager",
            [
                str(self.bin_dir / "kube-controller-manager"),
                f"--kubeconfig={kubeconfig}",
                "--leader-elect=false",
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'ca.crt'}",
                f"--cluster-signing-cert-file={pki / 'ca.crt'}",
                f"--cluster-signing-key-file={pki / 'ca.key'}",
                "--service-cluster-ip-range=10.96.0.0/24",
                "--secure-port=0",
                "--v=1",
                *self.controller_manager_args,
            ],
        )
        self._wait_controllers(manager)

    def _wait_controllers(self, manager: subprocess.Popen[bytes]) -> None:
        """Until the root CA publisher and the ServiceAccount controller have done their
        work in ``default`` (the controllers run; their informers have synced)."""
        ctx = ssl.create_default_context(cafile=str(self.ca_file))
        for what in ("configmaps/kube-root-ca.crt", "serviceaccounts/default"):
            self._wait_http(
                f"{self.server}/api/v1/namespaces/default/{what}",
                manager,
                "kube-controller-manager",
                ssl_ctx=ctx,
            )

    def _wait_http(
        self, url: str, proc: subprocess.Popen[bytes], name: str, ssl_ctx: ssl.SSLContext | None
    ) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        last = ""
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ControlPlaneError(
                    f"{name} exited with {proc.returncode} while starting:\n{self.log_tail(name)}"
                )
            req = urllib.request.Request(
                url, headers={"Authorization": f"Bearer {self.admin_token}"}
            )
            try:
                with urllib.request.urlopen(req, timeout=2, context=ssl_ctx) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
            time.sleep(0.1)
        raise ControlPlaneError(
            f"{name} did not become ready at {url} within {READY_TIMEOUT_S:.0f}s "
            f"(last error: {last}):\n{self.log_tail(name)}"
        )

    def _write_kubeconfig(self) -> None:
        self.kubeconfig.write_text(
            self._kubeconfig_text("admin", f"    token: {self.admin_token}\n")
        )

    def _kubeconfig_text(self, user: str, credentials: str) -> str:
        return (
            "apiVersion: v1\nkind: Config\n"
            "clusters:\n- name: numa-testkit\n  cluster:\n"
            f"    server: {self.server}\n    certificate-authority: {self.ca_file}\n"
            f"users:\n- name: {user}\n  user:\n"
            f"{credentials}"
            "contexts:\n- name: numa-testkit\n"
            f"  context: {{cluster: numa-testkit, user: {user}}}\n"
            "current-context: numa-testkit\n"
        )

    def stop(self) -> None:
        """Terminate the controller-manager, the apiserver, then etcd (SIGTERM, then
        SIGKILL) and remove the workdir."""
        for proc in reversed(self._procs):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=5)
        self._procs.clear()
        shutil.rmtree(self.workdir, ignore_errors=True)
