"""The scorecard page: self-contained, every cell coloured by what happened and linking a
reproducer that exists, everything from the records escaped."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.scorecard.assertions import Verdict
from tests.scorecard.report import anchor, render

VOID = {"meta", "br", "link", "img", "input", "hr"}


class Page(HTMLParser):
    """What the tests look at: ids, internal links, the classes of matrix cells, external
    references, and whether every element is closed in order."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.links: list[str] = []
        self.external: list[str] = []
        self.cell_classes: dict[str, str] = {}
        self.stack: list[str] = []
        self.balanced = True
        self._td_class = ""
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(str(a["id"]))
        if tag == "td":
            self._td_class = a.get("class") or ""
        for key in ("href", "src"):
            value = a.get(key)
            if value is None:
                continue
            if value.startswith("#"):
                self.links.append(value[1:])
                if tag == "a" and "cell" in self._td_class:
                    self.cell_classes[value[1:]] = self._td_class
            else:
                self.external.append(value)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.balanced = False
            return
        self.stack.pop()


def rec(
    scheduler: str = "reference-reconstruction",
    scenario: str = "b",
    variant: str = "exporter-lag0",
    *,
    errors: int = 0,
    default: bool = True,
    claims: tuple[str, ...] = ("aligned",),
    findings: dict[str, list[str]] | None = None,
    harness: dict[str, list[str]] | None = None,
    ran: bool = True,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "scheduler": scheduler,
        "scenario": scenario,
        "variant": variant,
        "default_variant": default,
        "claims": list(claims),
        "findings": findings or {},
        "harness_problems": harness or {},
        "reproducer": {
            "command": f"make scorecard CELL={scheduler}/{scenario}/{variant}",
            "nodes": [{"name": "n1"}],
            "pods": [{"metadata": {"name": "p"}}],
            "timeline": [[0.5, "p", "bound", "n1"]],
        },
    }
    if ran:
        out.update(
            submitted=3,
            bound=3,
            running=3 - errors,
            pending=0,
            topology_affinity_errors=errors,
            prediction_agreement=None,
            settled=True,
        )
    return out


VERDICTS = [Verdict("harness", "holds", True), Verdict("claims", "fails", False, ("x/b: y",))]


def _page(records: list[dict[str, Any]], verdicts: list[Verdict] = VERDICTS) -> tuple[str, Page]:
    text = render(records, verdicts, title="t", facts={"matrix": "ci"})
    return text, Page(text)


def test_each_cell_is_coloured_by_what_happened() -> None:
    records = [
        rec("ok"),
        rec("errors", errors=2, findings={"aligned": ["p: TopologyAffinityError"]}),
        rec("finding", claims=(), findings={"reports-unschedulable": ["p: silent"]}),
        rec("harness", harness={"held_twice": ["n1 cpu 0"]}),
        rec("broken", findings={"aligned": ["two ran"]}),
        rec("not-default", default=False, variant="no-exporter-lag0", findings={"aligned": ["x"]}),
        rec("failed", ran=False, harness={"error": ["scheduler exited"]}),
    ]
    _, page = _page(records)
    classes = {k: page.cell_classes[anchor(r)] for k, r in zip("1234567", records, strict=True)}
    assert classes == {
        "1": "cell ok",
        "2": "cell errors broken",  # a claimed scenario's error, default variant
        "3": "cell finding",
        "4": "cell harness",
        "5": "cell finding broken",
        "6": "cell finding",  # the same finding outside the default variant: not asserted
        "7": "cell harness",
    }


def test_every_link_reaches_a_reproducer_with_the_command_and_nothing_is_external() -> None:
    records = [rec(), rec("other", errors=1), rec("other", variant="exporter-lag5", default=False)]
    text, page = _page(records)
    assert page.balanced and not page.stack
    assert len(page.ids) == len(set(page.ids))
    assert set(page.links) <= set(page.ids)
    assert {anchor(r) for r in records} <= set(page.links)
    assert page.external == []
    assert "make scorecard CELL=other/b/exporter-lag5" in text


def test_failing_assertions_are_stated_at_the_top_with_their_evidence() -> None:
    text, _ = _page([rec()])
    assert text.index("1 assertion(s) fail: claims") < text.index("<h2>Matrix")
    assert "x/b: y" in text and ">FAILS<" in text
    text, _ = _page([rec()], [Verdict("harness", "holds", True)])
    assert "Every applicable assertion holds." in text


def test_findings_list_the_worst_first() -> None:
    text, _ = _page([rec("few", errors=1), rec("many", errors=5), rec("none")])
    findings = text[text.index("<h2>Findings") : text.index("<h2>Assertions")]
    assert findings.index("many") < findings.index("few") and "none" not in findings


_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=12
)


@given(
    st.lists(
        st.builds(
            rec,
            scheduler=_TEXT,
            scenario=st.sampled_from("abcdefgh"),
            variant=st.sampled_from(["exporter-lag0", "no-exporter-lag5"]),
            errors=st.integers(0, 5),
            default=st.booleans(),
            findings=st.dictionaries(st.sampled_from(["aligned", "unclaimable"]), st.lists(_TEXT)),
            ran=st.booleans(),
        ),
        max_size=6,
    )
)
def test_any_records_give_a_well_formed_page_whose_links_resolve(
    records: list[dict[str, Any]],
) -> None:
    """Whatever the scheduler ids and findings say (markup included), the page's structure
    is the page's: every element closed, every internal link to an existing id."""
    unique = list({anchor(r): r for r in records}.values())
    _, page = _page(unique)
    assert page.balanced and not page.stack
    assert set(page.links) <= set(page.ids)


def test_a_dra_cell_shows_its_misaligned_pods_and_one_not_applicable_says_so() -> None:
    dra = rec("kube-scheduler", "i", claims=(), findings={"aligned": ["far: runs misaligned"]})
    dra["misaligned"] = 1
    na = rec("reference-reconstruction", "i", ran=False)
    na["not_applicable"] = "reference-reconstruction does not allocate ResourceClaims"
    text, page = _page([dra, na])
    assert page.balanced
    assert page.cell_classes[anchor(dra)] == "cell finding"
    assert page.cell_classes[anchor(na)] == "cell absent"
    assert "misaligned (DRA): 1" in text
    assert '<span class="n">n/a</span>' in text
    assert "reference-reconstruction does not allocate ResourceClaims" in text
