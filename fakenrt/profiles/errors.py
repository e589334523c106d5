"""The one error an invalid node profile raises."""

from __future__ import annotations


class ProfileError(ValueError):
    """An invalid node profile. The message names the file, the node and the field.

    ``str(error)`` reads ``<source>: node "<name>": <field>: <detail>``; parts that do not
    apply (an unreadable file has no node) are left out. The parts are also attributes so
    callers can point at the offending spot themselves.
    """

    def __init__(
        self,
        detail: str,
        *,
        source: str,
        node: str | None = None,
        field: str | None = None,
    ) -> None:
        self.source = source
        self.node = node
        self.field = field
        self.detail = detail
        parts = [source]
        if node is not None:
            shown = node if len(node) <= 60 else f"{node[:60]}...({len(node)} characters)"
            parts.append(f'node "{shown}"')
        if field is not None:
            parts.append(field)
        parts.append(detail)
        super().__init__(": ".join(parts))
