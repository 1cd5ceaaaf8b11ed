"""Which metrics and dimensions a question's words touch: names, labels and synonyms, matched as whole
words (case and ``_`` ignored), longest phrases first so "average order value" is not read as "order".

>>> from gateway.semantic.model import SemanticModel
>>> m = SemanticModel.model_validate({"entities": {"orders": {"table": "orders", "primary_key": "id",
...     "dimensions": {"channel": {"synonyms": ["sales channel"]}}, "measures": {"t": {"agg": "sum", "expr": "x"}}}},
...     "metrics": {"revenue": {"measure": "orders.t", "synonyms": ["sales"]}}})
>>> touched(m, "Sales by sales channel in 2024")
Touched(metrics=('revenue',), dimensions=('channel',), entities=())
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway.semantic.model import SemanticModel


@dataclass(frozen=True, slots=True)
class Touched:
    metrics: tuple[str, ...] = ()
    dimensions: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        """The question speaks of anything the model defines (a metric, a dimension or an entity)."""
        return bool(self.metrics or self.dimensions or self.entities)


def _norm(text: str) -> str:
    return " " + " ".join(re.findall(r"[a-z0-9]+", text.lower().replace("_", " "))) + " "


def touched(model: SemanticModel, text: str) -> Touched:
    """The metrics and dimensions whose words appear in ``text``, in the model's order."""
    words = sorted(model.words().items(), key=lambda item: -len(item[0]))
    rest = _norm(text)
    metrics: set[str] = set()
    dims: set[str] = set()
    entities: set[str] = set()
    for word, (kind, name) in words:
        phrase = _norm(word)
        if phrase.strip() and phrase in rest:
            rest = rest.replace(phrase, " | ")
            if kind == "metric":
                metrics.add(name)
            elif kind == "dimension":
                dims.add(name)
            else:
                entities.add(name)
    order_m = [m for m in model.metrics if m in metrics]
    order_d = [d for e in model.entities.values() for d in e.dimensions if d in dims]
    return Touched(tuple(order_m), tuple(order_d), tuple(e for e in model.entities if e in entities))
