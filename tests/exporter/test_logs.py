"""Structured logs: one JSON object per line with the ``extra`` fields."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from exporter import logs


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    logger = logging.getLogger("exporter")
    state = (list(logger.handlers), logger.level, logger.propagate)
    out = io.StringIO()
    logs.configure("info", out)
    yield out
    logger.handlers[:], logger.level, logger.propagate = state[0], state[1], state[2]


def test_json_lines_with_extra_fields(stream: io.StringIO) -> None:
    log = logging.getLogger("exporter.reconciler")
    log.info("annotations written", extra={"pod": "ns/p", "annotations": {"a": None}})
    log.debug("hidden below the level")
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("pass failed")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert len(lines) == 2
    first = lines[0]
    assert first["level"] == "info" and first["msg"] == "annotations written"
    assert first["pod"] == "ns/p" and first["annotations"] == {"a": None}
    assert first["logger"] == "exporter.reconciler" and first["ts"].endswith("Z")
    assert "ValueError: boom" in lines[1]["exception"]
