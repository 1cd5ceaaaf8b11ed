"""The package as a user installs it: the wheel built from this checkout, installed into a fresh virtualenv.

Used by tests/test_core_install.py (serve from an install without extras) and bench/size.py (installed
sizes). The wheel is built from a copy of what the Dockerfile copies (pyproject.toml, README.md, gateway/),
so the build leaves nothing in the checkout and misses what the image would miss. Installs go through
this interpreter's pip with ``--python``, so the new environment needs no pip of its own and the packages
come from pip's cache when they were downloaded before.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "gateway")


def build_wheel(workdir: Path, ref: str | None = None) -> Path:
    """Build the project's wheel in ``workdir`` from the checkout, or from git revision ``ref``; returns its path."""
    src = workdir / "src"
    src.mkdir(parents=True)
    if ref is not None:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, *SOURCES], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
    for name in SOURCES if ref is None else ():
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, src / name)
    out = workdir / "wheels"
    _pip("wheel", "--no-deps", "--wheel-dir", str(out), str(src))
    (wheel,) = out.glob("nl2sql_gateway-*.whl")
    return wheel


def new_venv(path: Path, *, with_pip: bool = False) -> Path:
    """A fresh virtualenv, by default without pip (this interpreter's pip installs into it); returns its python."""
    venv.EnvBuilder(with_pip=with_pip, clear=True).create(path)
    return path / "bin" / "python"


def pip_install(python: Path, *requirements: str, compile_bytecode: bool = False) -> None:
    """Install ``requirements`` (with their dependencies, resolved as usual) into ``python``'s environment.

    ``compile_bytecode`` writes every .pyc up front, as pip does by default (the image's install does): slow, so
    the tests leave it off and let imports compile what they use.
    """
    _pip("--python", str(python), "install", *(() if compile_bytecode else ("--no-compile",)), *requirements)


def site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def _pip(*args: str) -> None:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = subprocess.run([sys.executable, "-m", "pip", "--quiet", *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"pip {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
