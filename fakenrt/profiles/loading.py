"""Reading profile files (the I/O half of profiles; parsing is in ``parsing``).

Files are read through :func:`fakenrt.textfiles.read_text` (at most 8 MiB, UTF-8 text)
and parsed by :mod:`fakenrt.yamltext` (libyaml's C parser, bounded, duplicate keys
refused).
"""

from __future__ import annotations

from pathlib import Path

from fakenrt.profiles.errors import ProfileError
from fakenrt.profiles.model import NodeProfile
from fakenrt.profiles.parsing import parse_profiles
from fakenrt.textfiles import TextFileError, read_text
from fakenrt.yamltext import YamlError, load_all, load_one

#: The example profiles shipped with fakenrt (``dgx.yaml``, ``shapes.yaml``).
EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples" / "profiles"


def load_yaml(text: str, *, source: str) -> object:
    """One YAML document from ``text``; syntax errors, duplicate keys and hostile sizes
    become :class:`ProfileError` with the line."""
    try:
        return load_one(text)
    except YamlError as exc:
        raise ProfileError(str(exc), source=source) from None


def load_yaml_documents(text: str) -> list[object]:
    """Every non-empty document of a multi-document YAML text, duplicate keys refused (as
    the API server's strict field validation refuses duplicate fields). Raises
    :class:`fakenrt.yamltext.YamlError`."""
    return load_all(text)


def load_profiles(path: str | Path) -> tuple[NodeProfile, ...]:
    """Read and validate a profile file. Raises :class:`ProfileError` naming the file."""
    source = str(path)
    try:
        text = read_text(path)
    except TextFileError as exc:
        # the message already starts with the path
        raise ProfileError(str(exc).removeprefix(f"{source}: "), source=source) from None
    return parse_profiles(load_yaml(text, source=source), source=source)


def example_profile(name: str) -> Path:
    """The path of a bundled example profile (``"dgx"`` or ``"dgx.yaml"``)."""
    file_name = name if name.endswith((".yaml", ".yml")) else f"{name}.yaml"
    path = EXAMPLES_DIR / file_name
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in EXAMPLES_DIR.glob("*.yaml")))
        raise ProfileError(f"no such example profile; examples: {known}", source=file_name)
    return path
