"""The README as a newcomer reads it: a table of contents whose links land, one Operations section."""

from __future__ import annotations

import re
from pathlib import Path

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _headings() -> list[str]:
    # code blocks hold shell comments that look like headings
    text = re.sub(r"```.*?```", "", README, flags=re.S)
    return [m.group(2) for m in re.finditer(r"^(#{1,6}) (.+)$", text, re.M)]


def test_every_internal_link_lands_on_a_heading() -> None:
    anchors = {_slug(h) for h in _headings()}
    links = re.findall(r"\]\(#([^)]+)\)", README)
    assert len(links) >= 10
    assert sorted(set(links) - anchors) == []


def test_contents_lists_every_top_level_section() -> None:
    contents = README[README.index("## Contents"):README.index("## Quick start")]
    sections = [m.group(1) for m in re.finditer(r"^## (.+)$", re.sub(r"```.*?```", "", README, flags=re.S), re.M)]
    assert len(sections) > 8
    for section in sections:
        if section != "Contents":
            assert f"(#{_slug(section)})" in contents, f"{section} missing from the table of contents"


def test_one_operations_section_and_newcomer_sections_up_front() -> None:
    assert len(re.findall(r"^## .*[Oo]perations", README, re.M)) == 1
    first_screen = README[:README.index("## HTTP API")]
    assert "### Connect your own database" in first_screen and "### Point it at an LLM" in first_screen
    assert "serve --dsn" in first_screen
    assert re.search(r"tests take about \d+ minutes", first_screen)


def test_evaluation_docs_reach_the_demo_through_its_config() -> None:
    evaluation = (Path(__file__).resolve().parent.parent / "docs" / "evaluation.md").read_text(encoding="utf-8")
    assert "localhost:5432/demo" not in evaluation  # the demo listens on a unix socket only
    assert "nl2sql-gateway-demo.toml" in evaluation
    from gateway.demo.run import CONFIG_FILE

    assert CONFIG_FILE == "nl2sql-gateway-demo.toml"
