"""Files that ship with the gateway but live at the top of the repository: ``rules/``, ``guidelines/`` and
``semantic/``.

They stay top-level folders in a checkout so that DBAs edit them where they expect them. A wheel carries
them as data files under ``<prefix>/share/nl2sql-gateway/`` (``[tool.setuptools.data-files]`` in
pyproject.toml). Lookup order: the checkout this package was imported from (an editable install or a
clone), then the installed share folder. Nothing resolves against the working directory.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path
from typing import Literal

Asset = Literal["rules", "guidelines", "semantic"]
SHARE = Path("share") / "nl2sql-gateway"
# one file that must be there, so that an unrelated folder of the same name is never taken for ours
MARKERS: dict[Asset, str] = {"rules": "demo.yaml", "guidelines": "default.md", "semantic": "demo.yaml"}


def shipped_dir(asset: Asset) -> Path:
    """The folder holding the shipped ``rules`` or ``guidelines``."""
    for candidate in _candidates(asset):
        if (candidate / MARKERS[asset]).is_file():
            return candidate
    return _candidates(asset)[-1]  # reported as missing by whoever reads it, with this path in the message


def _candidates(asset: Asset) -> list[Path]:
    checkout = Path(__file__).resolve().parent.parent
    prefixes = [Path(sysconfig.get_path("data")), Path(sys.prefix), Path(sys.base_prefix)]
    return [checkout / asset, *(prefix / SHARE / asset for prefix in prefixes)]
