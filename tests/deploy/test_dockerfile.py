"""The Dockerfile builds in two stages, runs as a non-root user and checks /healthz (read, not built: no engine)."""

from __future__ import annotations

import fnmatch
import json
import shlex
import tomllib
from dataclasses import dataclass, field

import pytest

from tests.deploy.paths import DOCKERFILE, DOCKERIGNORE, ROOT


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for kw, args in self.instructions if kw == keyword]


def instructions() -> list[tuple[str, str]]:
    """(KEYWORD, arguments) with comments dropped and continuation lines joined."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in DOCKERFILE.read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        pending += stripped[:-1] + " " if stripped.endswith("\\") else stripped
        if not stripped.endswith("\\"):
            keyword, _, args = pending.partition(" ")
            out.append((keyword.upper(), args.strip()))
            pending = ""
    return out


def stages() -> list[Stage]:
    found: list[Stage] = []
    for keyword, args in instructions():
        if keyword == "FROM":
            words = args.split()
            found.append(Stage(words[0], words[2] if len(words) > 2 and words[1].upper() == "AS" else None))
        elif found:
            found[-1].instructions.append((keyword, args))
    return found


def arg_defaults() -> dict[str, str]:
    return dict(args.split("=", 1) for kw, args in instructions() if kw == "ARG" and "=" in args)


def exec_form(args: str) -> list[str]:
    value = json.loads(args)
    assert isinstance(value, list), f"{args} should be in exec (JSON) form so that signals reach the server"
    return value


def test_multi_stage_build_copies_only_the_virtualenv() -> None:
    builder, runtime = stages()[0], stages()[-1]
    assert len(stages()) >= 2 and builder.name
    assert any(f"--from={builder.name}" in c for c in runtime.all("COPY"))
    assert any("pip install" in r for r in builder.all("RUN"))
    assert not any("pip install" in r for r in runtime.all("RUN")), "the runtime stage should not build anything"


def test_the_image_installs_the_core_only() -> None:
    """No extras in the image: the demo's embedded Postgres and eval's chart libraries stay out of production."""
    builder = stages()[0]
    installs = [r for r in builder.all("RUN") if "pip install" in r]
    assert installs
    for command in installs:
        words = shlex.split(command.split("pip install", 1)[1].split("&&")[0])
        assert words and all("[" not in w and not w.startswith("-") for w in words), command
        assert all(w.endswith(".whl") for w in words), command  # the wheel built above, nothing else


def test_base_image_is_a_slim_python_the_package_supports() -> None:
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    for stage in stages():
        base = stage.base.replace("${PYTHON_IMAGE}", arg_defaults().get("PYTHON_IMAGE", ""))
        assert base.startswith("python:3.11") and "slim" in base, base
    assert requires == ">=3.11"


def test_runtime_runs_as_a_non_root_user_that_exists() -> None:
    runtime = stages()[-1]
    users = runtime.all("USER")
    assert users, "the runtime stage sets no USER"
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"}
    created = " ".join(runtime.all("RUN"))
    assert f"--uid {user}" in created or f"useradd {user}" in created, "USER names a user the image never creates"


def test_healthcheck_calls_healthz_with_python_only() -> None:
    (check,) = stages()[-1].all("HEALTHCHECK")
    options, _, command = check.partition("CMD ")
    assert "--interval=" in options and "--timeout=" in options
    argv = exec_form(command)
    assert argv[:2] == ["python", "-c"]
    compile(argv[2], "<healthcheck>", "exec")  # the snippet is valid Python
    assert "urllib.request" in argv[2] and "/healthz" in argv[2] and "curl" not in check


def test_serves_on_all_interfaces_port_8000_with_the_config_file() -> None:
    runtime = stages()[-1]
    assert runtime.all("EXPOSE") == ["8000"]
    assert exec_form(runtime.all("CMD")[-1]) == ["nl2sql-gateway", "serve", "--host", "0.0.0.0"]
    env = " ".join(runtime.all("ENV"))
    assert "NL2SQL_CONFIG=/etc/nl2sql-gateway/nl2sql-gateway.toml" in env
    assert any(c.endswith(" /etc/nl2sql-gateway/nl2sql-gateway.toml") for c in runtime.all("COPY"))
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert "nl2sql-gateway" in scripts


def dockerignored(path: str) -> bool:
    """Docker's rule: the last matching pattern wins; '!' re-includes."""
    ignored = False
    for raw in DOCKERIGNORE.read_text().splitlines():
        pattern = raw.strip()
        if not pattern or pattern.startswith("#"):
            continue
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").rstrip("/")
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(fnmatch.fnmatch(p, pattern) or fnmatch.fnmatch(p, pattern.removeprefix("**/"))
               for p in prefixes):
            ignored = not negate
    return ignored


def copy_sources() -> list[str]:
    sources = []
    for stage in stages():
        for args in stage.all("COPY"):
            words = [w for w in shlex.split(args) if not w.startswith("--")]
            if "--from=" not in args:
                sources += words[:-1]
    return sources


@pytest.mark.parametrize("source", copy_sources())
def test_every_copied_path_exists_and_is_in_the_build_context(source: str) -> None:
    assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
    assert not dockerignored(source), f"COPY {source}: excluded by .dockerignore"


def test_dockerignore_keeps_secrets_and_clutter_out() -> None:
    for path in (".git/config", "tests/conftest.py", "gateway/__pycache__/x.pyc", "bench/load.py",
                 "deploy/k8s/secret.yaml", "nl2sql-gateway.local.toml"):
        assert dockerignored(path), path
    assert not dockerignored("deploy/config/image.toml")
