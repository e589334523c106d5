"""Reading profile files (the I/O half of profiles; parsing is in ``parsing``).

Files are read through :func:`fakenrt.textfiles.read_text`: at most 8 MiB, UTF-8 text.

YAML is read with a safe loader that also rejects duplicate mapping keys: PyYAML would
silently keep the last one, and a duplicated ``memory:`` must not pass unnoticed.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from fakenrt.profiles.errors import ProfileError
from fakenrt.profiles.model import NodeProfile
from fakenrt.profiles.parsing import parse_profiles
from fakenrt.textfiles import TextFileError, read_text

#: The example profiles shipped with fakenrt (``dgx.yaml``, ``shapes.yaml``).
EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples" / "profiles"


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping with the same key twice."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[object, object]:
    seen: set[object] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {key!r} (line {mark.line + 1})",
                mark,
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml(text: str, *, source: str) -> object:
    """One YAML document from ``text``; syntax errors and duplicate keys become
    :class:`ProfileError` with the line."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise ProfileError(f"not valid YAML: {detail}", source=source) from None


def load_yaml_documents(text: str) -> list[object]:
    """Every non-empty document of a multi-document YAML text, duplicate keys refused (as
    the API server's strict field validation refuses duplicate fields). Raises
    ``yaml.YAMLError``."""
    return [d for d in yaml.load_all(text, Loader=_StrictLoader) if d is not None]


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
