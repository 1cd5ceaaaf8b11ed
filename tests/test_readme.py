"""The README as a newcomer reads it: a short front page whose links land, the reference in docs/ pages whose
links land too."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 300


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _prose(text: str) -> str:
    """The text outside fenced code blocks (they hold shell comments that look like headings, and code)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def _headings(text: str) -> list[str]:
    return [m.group(2) for m in re.finditer(r"^(#{1,6}) (.+)$", _prose(text), re.M)]


def _anchors(text: str) -> set[str]:
    """Every anchor GitHub gives the page's headings, a repeated one suffixed -1, -2, ..."""
    seen: dict[str, int] = {}
    anchors = set()
    for heading in _headings(text):
        slug = _slug(heading)
        anchors.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


def _links(text: str) -> list[str]:
    """Targets of inline links and images, outside code blocks and code spans."""
    prose = re.sub(r"`[^`\n]*`", "", _prose(text))
    return re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", prose)


def test_readme_is_a_front_page() -> None:
    lines = README.count("\n") + (not README.endswith("\n"))
    assert lines < README_MAX_LINES, f"README.md has {lines} lines: move reference material to docs/"


def test_every_relative_link_in_readme_and_docs_lands() -> None:
    broken = []
    checked = 0
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for target in _links(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            checked += 1
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest.read_text(encoding="utf-8")):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert checked > 100
    assert broken == []


def test_link_checker_sees_a_broken_file_and_a_broken_anchor(tmp_path: Path) -> None:
    """The checker's own pieces: anchors as GitHub spells them, links outside code only."""
    text = "# A `POST /v1/ask` page\n## Twice\n## Twice\n```\n# not a heading\n[x](nowhere.md)\n```\n[y](`z`)\n"
    assert _anchors(text) == {"a-post-v1ask-page", "twice", "twice-1"}
    assert _links(text + "[a](b.md#c) and `[d](e.md)`") == ["b.md#c"]


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {Path(t.partition("#")[0]).name for t in _links(README) if t.startswith("docs/")}
    for page in PAGES[1:]:
        assert page.name in linked, f"docs/{page.name} is not linked from the README's documentation table"


def test_contents_lists_every_top_level_section() -> None:
    contents = README[README.index("## Contents"):README.index("## Quick start")]
    sections = [m.group(1) for m in re.finditer(r"^## (.+)$", _prose(README), re.M)]
    assert len(sections) > 4
    for section in sections:
        if section != "Contents":
            assert f"(#{_slug(section)})" in contents, f"{section} missing from the table of contents"


def test_one_operations_page_and_newcomer_sections_up_front() -> None:
    everything = "\n".join(_prose(page.read_text(encoding="utf-8")) for page in PAGES)
    assert len(re.findall(r"^#{1,2} .*[Oo]perations", everything, re.M)) == 1
    first_screen = README[:README.index("## How it works")]
    assert "### Connect your own database" in first_screen and "### Point it at an LLM" in first_screen
    assert "serve --dsn" in first_screen
    assert re.search(r"tests take about \d+ minutes", first_screen)


def test_evaluation_docs_reach_the_demo_through_its_config() -> None:
    evaluation = (ROOT / "docs" / "evaluation.md").read_text(encoding="utf-8")
    assert "localhost:5432/demo" not in evaluation  # the demo listens on a unix socket only
    assert "nl2sql-gateway-demo.toml" in evaluation
    from gateway.demo.run import CONFIG_FILE

    assert CONFIG_FILE == "nl2sql-gateway-demo.toml"


def test_ci_runs_the_quick_starts_test_command() -> None:
    """The quick start is two commands, and .ci/run installs and tests exactly as the second one says."""
    quick = README[README.index("## Quick start"):README.index("### Connect your own database")]
    (block,) = re.findall(r"```bash\n(.*?)```", quick, re.S)
    commands = [line for line in block.splitlines() if line.strip() and not line.startswith("#")]
    assert len(commands) == 2
    demo, test = commands
    assert "pip install -e '.[demo]'" in demo and demo.endswith("nl2sql-gateway demo")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ".venv/bin/pip install --quiet -e '.[demo]'" in ci
    install, run = test.split(" && ")
    assert install.replace("pip install", "pip install --quiet") in ci and run in ci
