"""Regenerate the Python modules for the protos: ``python -m protos.generate``.

For each proto (podresources v1, device plugin v1beta1, DRA kubelet plugin v1, plugin
registration v1, DRA device health v1alpha1) the generated ``api_pb2.py``,
``api_pb2.pyi``, ``api_pb2_grpc.py`` and ``api_pb2_grpc.pyi`` are committed beside
``api.proto``; ``tests/test_protos.py``, ``tests/deviceplugin/test_protos.py`` and
``tests/draplugin/test_protos.py`` fail when they drift from it. Only the gRPC modules at
the edges import them (import-linter contracts): the fake podresources server, the fake
device plugin, the fake DRA kubelet plugin.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PROTO = Path("protos/podresources/v1/api.proto")
DEVICEPLUGIN_PROTO = Path("protos/deviceplugin/v1beta1/api.proto")
DRA_PROTO = Path("protos/dra/v1/api.proto")
REGISTRATION_PROTO = Path("protos/pluginregistration/v1/api.proto")
DRA_HEALTH_PROTO = Path("protos/drahealth/v1alpha1/api.proto")
PROTOS = (PROTO, DEVICEPLUGIN_PROTO, DRA_PROTO, REGISTRATION_PROTO, DRA_HEALTH_PROTO)
GENERATED = ("api_pb2.py", "api_pb2.pyi", "api_pb2_grpc.py", "api_pb2_grpc.pyi")


def generate(out_root: Path, proto: Path = PROTO) -> list[Path]:
    """Run grpcio-tools (with mypy-protobuf) on ``proto``, writing under ``out_root``.

    Returns the generated files, at the same relative paths as in the repository.
    """
    out_root.mkdir(parents=True, exist_ok=True)
    bindir = Path(sys.executable).parent
    cmd = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        f"-I{REPO_ROOT}",
        f"--python_out={out_root}",
        f"--grpc_python_out={out_root}",
        f"--plugin=protoc-gen-mypy={bindir / 'protoc-gen-mypy'}",
        f"--plugin=protoc-gen-mypy_grpc={bindir / 'protoc-gen-mypy_grpc'}",
        f"--mypy_out={out_root}",
        f"--mypy_grpc_out={out_root}",
        str(REPO_ROOT / proto),
    ]
    subprocess.run(cmd, check=True)
    return [out_root / proto.parent / name for name in GENERATED]


def main() -> None:
    for proto in PROTOS:
        with tempfile.TemporaryDirectory() as tmp:
            for produced in generate(Path(tmp), proto):
                target = REPO_ROOT / proto.parent / produced.name
                shutil.copyfile(produced, target)
                print(f"wrote {target.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
