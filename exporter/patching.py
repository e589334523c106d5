"""Writing the two observed annotations onto one pod, and nothing else.

The patch is a JSON merge patch that names only the annotations that change (``null``
removes one) and carries two preconditions: ``metadata.uid`` (a patch never lands on a
new pod that reuses the name: the API server refuses to change a uid) and
``metadata.resourceVersion`` (the pod still is what the decision was made on, else 409).

Outcomes: 404 -> the pod is gone, skip; 409 -> re-read the pod and decide again;
429/5xx/timeouts -> back off with jitter and retry a few times; other refusals
(RBAC, admission policy, invalid) -> give up on this pod (the reconciler backs off
before sending the same values again).
"""

from __future__ import annotations

import enum
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from exporter.kubeerrors import ApiError, Conflict, NotFound, Transient
from exporter.pods import PodObjectError, PodView

log = logging.getLogger(__name__)


class PatchResult(enum.StrEnum):
    APPLIED = "applied"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"  # counted per 409 met, whatever the final result
    REPLACED = "replaced"  # the name now belongs to a new pod (uid changed): not written
    REJECTED = "rejected"
    FAILED = "failed"
    UNCHANGED = "unchanged"  # after a re-read the pod already carries the values


def build_patch(pod: PodView, changes: Mapping[str, str | None]) -> dict[str, Any]:
    """The merge patch for ``changes`` (annotation -> new value, None = remove). Pure."""
    return {
        "metadata": {
            "uid": pod.uid,
            "resourceVersion": pod.resource_version,
            "annotations": dict(changes),
        }
    }


def changes_for(pod: PodView, desired: Mapping[str, str | None]) -> dict[str, str | None]:
    """The annotations whose desired value differs from what the pod carries. Pure."""
    return {name: value for name, value in desired.items() if pod.annotation(name) != value}


class PodWriter(Protocol):
    def get_pod(self, namespace: str, name: str) -> dict[str, Any]: ...

    def merge_patch_pod(
        self, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]: ...


@dataclass(frozen=True)
class PatchOutcome:
    result: PatchResult
    #: The pod as the API server returned it (after a patch: the patched pod with the
    #: answer's metadata; after a re-read: the pod read), if any.
    view: PodView | None = None
    #: True when an answer from the API server was received (for readiness).
    reached_api: bool = True
    #: The annotations written (empty unless APPLIED).
    written: Mapping[str, str | None] | None = None
    #: How many 409 answers were met (each followed by a re-read).
    conflicts: int = 0


class Patcher:
    """Applies annotation changes with the retry rules above.

    ``decide(obj)`` recomputes the changes from a re-read pod object (after a 409); it
    returns the changes to apply to that object, or None to stop (not ours to write).
    """

    def __init__(
        self,
        writer: PodWriter,
        *,
        sleep: Callable[[float], None],
        rng: random.Random,
        max_attempts: int = 4,
        base_delay_s: float = 0.2,
        max_delay_s: float = 2.0,
    ) -> None:
        self._writer = writer
        self._sleep = sleep
        self._rng = rng
        self.max_attempts = max_attempts
        self._base = base_delay_s
        self._max = max_delay_s

    def _delay(self, attempt: int) -> float:
        ceiling: float = min(self._max, self._base * 2.0**attempt)
        return ceiling * (0.5 + 0.5 * self._rng.random())

    def apply(
        self,
        pod: PodView,
        changes: Mapping[str, str | None],
        decide: Callable[[PodView], Mapping[str, str | None] | None],
        to_view: Callable[[Mapping[str, Any]], PodView],
    ) -> PatchOutcome:
        target, todo = pod, dict(changes)
        reached = False
        conflicts = 0
        last: PodView | None = None
        for attempt in range(self.max_attempts):
            try:
                answer = self._writer.merge_patch_pod(
                    target.namespace, target.name, build_patch(target, todo)
                )
                try:
                    patched: PodView | None = target.with_metadata(answer.get("metadata") or {})
                except PodObjectError as exc:  # not this pod's answer: the watch will tell
                    log.warning(
                        "unexpected patch answer", extra={"pod": pod.key, "error": str(exc)}
                    )
                    patched = None
                return PatchOutcome(PatchResult.APPLIED, patched, True, todo, conflicts)
            except NotFound:
                return PatchOutcome(PatchResult.NOT_FOUND, None, True, None, conflicts)
            except Conflict as exc:
                reached = True
                conflicts += 1
                log.info("patch conflict, re-reading", extra={"pod": pod.key, "error": str(exc)})
                try:
                    fresh = to_view(self._writer.get_pod(target.namespace, target.name))
                except NotFound:
                    return PatchOutcome(PatchResult.NOT_FOUND, None, True, None, conflicts)
                except (ApiError, PodObjectError) as read_exc:
                    log.warning("re-read failed", extra={"pod": pod.key, "error": str(read_exc)})
                    return PatchOutcome(PatchResult.FAILED, None, False, None, conflicts)
                last = fresh
                if fresh.uid != pod.uid:
                    # a new pod reuses the name: not what this decision was made for
                    return PatchOutcome(PatchResult.REPLACED, fresh, True, None, conflicts)
                again = decide(fresh)
                if not again:
                    return PatchOutcome(PatchResult.UNCHANGED, fresh, True, None, conflicts)
                target, todo = fresh, dict(again)
            except Transient as exc:
                reached = reached or exc.status != 0
                if attempt + 1 < self.max_attempts:
                    delay = self._delay(attempt)
                    log.warning(
                        "patch failed, retrying",
                        extra={"pod": pod.key, "error": str(exc), "retry_in_s": round(delay, 3)},
                    )
                    self._sleep(delay)
                else:
                    log.error("patch failed", extra={"pod": pod.key, "error": str(exc)})
            except ApiError as exc:  # 401/403/422...: retrying will not help
                log.error("patch rejected", extra={"pod": pod.key, "error": str(exc)})
                return PatchOutcome(PatchResult.REJECTED, None, True, None, conflicts)
        return PatchOutcome(PatchResult.FAILED, last, reached, None, conflicts)
