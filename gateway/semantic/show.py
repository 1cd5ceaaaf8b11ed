"""The native YAML of a model: what ``semantic show`` prints and ``semantic import`` writes.

Keys keep the model's field order and defaults are left out, so the text is stable: showing a model read
from its own dump gives the same text again (the round trip the importers are tested on).
"""

from __future__ import annotations

from typing import Any

import yaml

from gateway.semantic.model import SemanticModel


class _Dumper(yaml.SafeDumper):
    pass


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def dump(model: SemanticModel) -> str:
    """The model as native YAML text."""
    data: dict[str, Any] = model.model_dump(mode="json", exclude_defaults=True)
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)
