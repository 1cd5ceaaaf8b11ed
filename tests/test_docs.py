"""Documentation stays true: every setting, metric, error code and CLI command is documented, in the README or
the reference pages under docs/."""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path

from prometheus_client.metrics import MetricWrapperBase
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from gateway import errors
from gateway.observability import metrics
from gateway.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
EXAMPLE = (ROOT / "nl2sql-gateway.example.toml").read_text()
PAGES = {p.name: p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))}
DOCS = README + "".join(PAGES.values())


def setting_names(model: type[BaseModel]) -> set[str]:
    names: set[str] = set()
    for name, field in model.model_fields.items():
        names.add(name)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            names |= setting_names(annotation)
    return names


def test_every_setting_is_in_the_example_config() -> None:
    from gateway.settings import DatabaseSettings

    missing = sorted(n for n in setting_names(Settings) | setting_names(DatabaseSettings)
                     if not re.search(rf"(^|[\s#\[.]){n}\b", EXAMPLE, re.M) and n != "databases")
    assert not missing, f"settings missing from nl2sql-gateway.example.toml: {missing}"


def test_every_setting_has_a_description() -> None:
    from gateway.settings import DatabaseSettings

    def undocumented(model: type[BaseModel], prefix: str = "") -> list[str]:
        out = []
        for name, field in model.model_fields.items():
            annotation = field.annotation
            nested = isinstance(annotation, type) and issubclass(annotation, BaseModel)
            if nested:
                out += undocumented(annotation, f"{prefix}{name}.")  # type: ignore[arg-type]
            elif not field.description:
                out.append(prefix + name)
        return out

    assert not undocumented(DatabaseSettings) + undocumented(Settings)


def test_every_metric_is_documented() -> None:
    declared = [m._name for m in vars(metrics).values() if isinstance(m, MetricWrapperBase)]
    assert declared
    for name in declared:
        base = name.removesuffix("_total")
        assert re.search(rf"`{base}(_total)?`", DOCS), f"metric {name} is not documented in README/docs"
        assert name.startswith("nl2sql_")


def test_every_error_code_is_documented() -> None:
    for cls in errors.all_error_classes():
        assert f"`{cls.code}`" in DOCS, f"problem code {cls.code} is not documented"


def test_every_cli_command_is_documented_and_has_help() -> None:
    import typer.main

    from gateway.cli.main import app

    group = typer.main.get_command(app)
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        assert f"`{name}" in DOCS, f"command {name} missing from the README and docs/cli.md"
        assert command.help, f"command {name} has no --help text"
        for param in command.params:
            if param.param_type_name == "option" and param.name != "help":
                assert getattr(param, "help", None), f"{name} {param.name} has no help"


def _code_table(page: str, heading: str) -> dict[str, list[str]]:
    """The rows of the table under ``heading`` in docs/``page``: code -> the other cells."""
    text = PAGES[page]
    section = text[text.index(heading):]
    section = section[:section.find("\n#", 1) if "\n#" in section[1:] else len(section)]
    rows = re.findall(r"^\| `(\w+)` \|(.*)\|$", section, re.M)
    return {code: [cell.strip() for cell in rest.split(" | ")] for code, rest in rows}


def test_every_registered_finding_code_is_documented_and_every_documented_one_registered() -> None:
    """The registry (gateway.findings.CODES) is the one source: the two code tables list exactly its codes,
    with its meanings and its reflection behaviour."""
    from gateway.findings import CODES
    from gateway.settings import FINDING_CODES_REFLECTED_BY_DEFAULT

    safety = _code_table("security.md", "## Safety finding codes")
    answer = _code_table("ask.md", "## Finding codes of an answer")
    assert sorted(safety) == sorted(c.name for c in CODES.values() if c.family == "safety")
    assert sorted(answer) == sorted(c.name for c in CODES.values() if c.family != "safety")
    for name, (meaning,) in safety.items():
        assert meaning == CODES[name].meaning, f"docs/security.md's meaning of {name} differs from gateway/findings.py"
    for name, (family, meaning, reflection) in answer.items():
        code = CODES[name]
        expected = ("always" if code.always_reflects else "by default" if name in FINDING_CODES_REFLECTED_BY_DEFAULT
                    else "advisory; when listed" if code.advisory else "when listed" if code.reflectable
                    else "never")
        assert (family, meaning, reflection) == (code.family, code.meaning, expected), name


def test_safety_codes_are_the_registrys_safety_family() -> None:
    from gateway.findings import codes_of
    from gateway.safety import CODES

    assert CODES == codes_of("safety") and len(CODES) > 20


def test_every_error_code_has_a_row_with_its_status_in_the_problem_code_table() -> None:
    """The HTTP API page's table is where a client looks a code up: every class of gateway/errors.py has its row
    there, with the status it is sent with."""
    table = _code_table("http-api.md", "## Problem codes")
    for cls in errors.all_error_classes():
        assert cls.code in table, f"problem code {cls.code} has no row in docs/http-api.md's problem codes"
        assert table[cls.code][0] == str(cls.status), f"{cls.code}: docs/http-api.md says {table[cls.code][0]}"


SETTINGS_BEGIN = "<!-- settings table: generated by `python -m tests.test_docs`; do not edit by hand -->"
SETTINGS_END = "<!-- end of settings table -->"


def _default(field: FieldInfo) -> str:
    """A field's default as TOML would spell it; empty when it has none or it is computed."""
    value = field.default
    if field.default_factory is not None or value is PydanticUndefined or value is None:
        return ""
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, (int, float)):
        return f"`{value}`"
    if isinstance(value, (str, Path)):
        return f'`"{value}"`'
    if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in value):
        items = sorted(value) if isinstance(value, (set, frozenset)) else value
        return "`[" + ", ".join(f'"{v}"' for v in items) + "]`"
    return ""


def settings_table() -> str:
    """The settings table of docs/configuration.md, from the settings model: name, default, description."""
    from gateway.settings import DatabaseSettings

    def rows(model: type[BaseModel], prefix: str) -> list[str]:
        out = []
        for name, field in model.model_fields.items():
            annotation = field.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                out += rows(annotation, f"{prefix}{name}.")
            elif name != "databases":
                text = " ".join((field.description or "").split()).replace("|", "\\|")
                out.append(f"| `{prefix}{name}` | {_default(field)} | {text} |")
        return out

    lines = ["| setting | default | what it sets |", "|---|---|---|",
             *rows(Settings, ""), *rows(DatabaseSettings, "databases.NAME.")]
    return "\n".join([SETTINGS_BEGIN, "", *lines, "", SETTINGS_END])


def test_configuration_page_lists_every_setting() -> None:
    """docs/configuration.md's table is the settings model's: every field, its default and its description."""
    page = PAGES["configuration.md"]
    start, end = page.index(SETTINGS_BEGIN), page.index(SETTINGS_END) + len(SETTINGS_END)
    assert page[start:end] == settings_table(), "docs/configuration.md's settings table is stale: " \
        "run `python -m tests.test_docs` to regenerate it"


if __name__ == "__main__":
    path = ROOT / "docs" / "configuration.md"
    text = path.read_text()
    start, end = text.index(SETTINGS_BEGIN), text.index(SETTINGS_END) + len(SETTINGS_END)
    path.write_text(text[:start] + settings_table() + text[end:])
    print(f"rewrote the settings table in {path}")
