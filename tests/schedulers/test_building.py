"""Running a build script: the directory it prints, the override variable, failures."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from schedulers import building
from schedulers.adapter import Build


def _script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "build.sh"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return script


def test_the_last_line_printed_is_the_directory_and_stderr_is_progress(tmp_path: Path) -> None:
    out = tmp_path / "bin"
    out.mkdir()
    script = _script(tmp_path, f"echo building >&2; echo noise; echo {out}")
    progress = io.StringIO()  # no file descriptor, as under pytest's capture
    assert building.binaries(Build(script=script), progress=progress) == out
    assert progress.getvalue() == "building\n"


def test_the_override_variable_wins_without_running_the_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _script(tmp_path, "exit 1")
    monkeypatch.setenv("TEST_BIN", str(tmp_path))
    assert building.binaries(Build(script=script, override_env="TEST_BIN")) == tmp_path
    monkeypatch.setenv("TEST_BIN", str(tmp_path / "missing"))
    with pytest.raises(building.BuildError, match=r"\$TEST_BIN=.*missing is not a directory"):
        building.binaries(Build(script=script, override_env="TEST_BIN"))


@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        pytest.param("exit 3", "failed \\(exit 3", id="fails"),
        pytest.param("true", "failed \\(exit 0", id="prints-nothing"),
        pytest.param("echo /nonexistent/dir", "not a directory", id="not-a-directory"),
    ],
)
def test_a_failing_build_names_its_script(tmp_path: Path, body: str, complaint: str) -> None:
    script = _script(tmp_path, body)
    with pytest.raises(building.BuildError, match=complaint) as err:
        building.binaries(Build(script=script, summary="x"), progress=io.StringIO())
    assert str(script) in str(err.value)


def test_a_build_runs_once_per_process(tmp_path: Path) -> None:
    counter = tmp_path / "runs"
    script = _script(tmp_path, f"echo run >> {counter}; echo {tmp_path}")
    for _ in range(2):
        building.binaries(Build(script=script), progress=io.StringIO())
    assert counter.read_text() == "run\n"
    assert os.access(script, os.X_OK)


def test_main_builds_only_the_schedulers_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    built: list[str] = []

    def binaries(build: Build, **_: object) -> Path:
        built.append(str(build.script))
        return Path("/b")

    monkeypatch.setattr(building, "binaries", binaries)
    assert building.main(["kai,reference"]) == 0
    assert built == ["schedulers/kai/build.sh"]  # the reference scheduler builds nothing
    assert building.main(["nonesuch"]) == 2
    assert "unknown scheduler 'nonesuch'" in capsys.readouterr().err
