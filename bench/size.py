"""Installed size of the core and of each extra, as pip installs them into a fresh virtualenv.

    python bench/size.py [--baseline REF] [--top 15]

Builds the wheel from the checkout (tests/install.py: from a copy of what the Dockerfile copies), makes a
virtualenv the way the Dockerfile does (``python -m venv``, so with pip of its own), installs the wheel
without extras, then adds ``[demo]``, ``[eval]`` and ``[test]`` one after the other, and after each step
counts which distributions arrived and how much disk their files take (allocated blocks, as ``du`` counts,
bytecode included: pip compiles it by default, as in the image). ``--baseline REF`` also installs the core
of git revision REF (say ``main``) in the same run, for the before/after comparison. Packages come from
pip's cache when it has them. No Docker engine is needed: the image's ``/opt/venv`` holds exactly the
"core" and "venv's own pip" rows (the base image is not counted).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.install import build_wheel, new_venv, pip_install, site_packages  # noqa: E402

MB = 1_000_000
# Run inside the measured environment: {distribution: bytes on disk of the files its RECORD lists}.
PROBE = """
import importlib.metadata, json, os
sizes = {}
for dist in importlib.metadata.distributions():
    total = 0
    for file in dist.files or ():
        try:
            total += os.stat(file.locate()).st_blocks * 512
        except OSError:
            pass
    sizes[dist.metadata["Name"]] = total
print(json.dumps(sizes))
"""


def disk_usage(folder: Path) -> int:
    """Allocated bytes of every file and folder under ``folder`` (what ``du -s --block-size=1`` prints)."""
    seen: set[int] = set()
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in [".", *files]:
            info = os.lstat(os.path.join(dirpath, name))
            if info.st_ino not in seen:
                seen.add(info.st_ino)
                total += info.st_blocks * 512
    return total


def distributions(python: Path) -> dict[str, int]:
    out = subprocess.run([str(python), "-c", PROBE], capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout))


Part = tuple[str, dict[str, int], int]  # name, {distribution: bytes} it added, site-packages bytes after it


def install_steps(python: Path, steps: list[tuple[str, str]]) -> tuple[int, list[Part]]:
    """Install each step's requirement in turn; the venv's own bytes (pip) and what each step added."""
    own = disk_usage(site_packages(python))
    before = distributions(python)
    parts = []
    for part, requirement in steps:
        pip_install(python, requirement, compile_bytecode=True)
        now = distributions(python)
        parts.append((part, {n: size for n, size in now.items() if n not in before},
                      disk_usage(site_packages(python)) - own))
        before = now
    return own, parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", metavar="REF", help="Also measure the core install of this git revision.")
    parser.add_argument("--top", type=int, default=15, help="How many of the core's largest distributions to list.")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, pip {importlib.metadata.version('pip')}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="nl2sql-size-") as tmp:
        work = Path(tmp)
        parts: list[Part] = []
        if args.baseline:
            old = build_wheel(work / "baseline", ref=args.baseline)
            parts += install_steps(new_venv(work / "baseline-venv", with_pip=True),
                                   [(f"core at {args.baseline}", str(old))])[1]
        wheel = build_wheel(work / "build")
        own, steps = install_steps(new_venv(work / "venv", with_pip=True), [
            ("core", str(wheel)), ("+ demo", f"{wheel}[demo]"), ("+ eval", f"{wheel}[eval]"),
            ("+ test (beyond demo, eval)", f"{wheel}[test]")])
        parts += steps
    print("| part | MB added | site-packages after it, MB | distributions added |")
    print("|---|---|---|---|")
    for part, added, after in parts:
        names = ", ".join(sorted(added, key=lambda n: -added[n])[:8]) + (", ..." if len(added) > 8 else "")
        print(f"| {part} | {sum(added.values()) / MB:.1f} | {after / MB:.1f} | {len(added)}: {names} |")
    print(f"\nMB: 10^6 bytes allocated on disk (as du counts), bytecode included; the venv's own pip and setuptools "
          f"({own / MB:.1f} MB, also in the image's /opt/venv) are not counted.")
    core = next(added for part, added, _ in parts if part == "core")
    print(f"\nlargest distributions of the core install (of {len(core)}):")
    print("| distribution | MB |")
    print("|---|---|")
    for name, size in sorted(core.items(), key=lambda item: -item[1])[: args.top]:
        print(f"| {name} | {size / MB:.1f} |")


if __name__ == "__main__":
    main()
