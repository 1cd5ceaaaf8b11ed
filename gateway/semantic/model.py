"""The semantic model: what the business's words mean in SQL, in one typed shape every format maps into.

An :class:`Entity` is a table with a primary key, its :class:`Dimension` s (columns to group and filter by;
time dimensions carry the grains they may be truncated to), its :class:`Measure` s (an aggregation over a
column expression) and its many-to-one :class:`Relationship` s (a foreign key to another entity's primary
key: the only join paths a metric may take). A :class:`Metric` is ``simple`` (one measure, an optional
filter), ``ratio`` (numerator metric over denominator metric) or ``derived`` (an expression over other
metrics). A :class:`DefaultFilter` is a condition every query on an entity carries (``required``: a
generated query that leaves it out is a finding). :class:`VerifiedQuery` s are question/SQL pairs that a
team has checked.

Names are global: dimension names are unique across the model (a query says ``region``, not
``regions.name``), as are metric names, so a question's words resolve to one thing. The model is frozen
pydantic: the native YAML format is its dump (``semantic show``), and every importer builds one.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Grain = Literal["day", "week", "month", "quarter", "year"]
GRAINS: tuple[Grain, ...] = ("day", "week", "month", "quarter", "year")
Aggregation = Literal["sum", "count", "count_distinct", "avg", "min", "max"]
MetricType = Literal["simple", "ratio", "derived"]

_STRICT = ConfigDict(extra="forbid", frozen=True)


class Dimension(BaseModel):
    """A column to group or filter by. ``column`` defaults to the dimension's name."""

    model_config = _STRICT
    column: str | None = None
    type: Literal["categorical", "time", "boolean"] = "categorical"
    grains: list[Grain] = Field(default_factory=list)
    description: str = ""
    synonyms: list[str] = Field(default_factory=list)
    # stored value -> the words people use for it ("North America": ["NA", "US and Canada"]): value hints
    # resolve them in the question, and the catalog shows them to the LLM picking filters
    values: dict[str, list[str]] = Field(default_factory=dict)


class Measure(BaseModel):
    """An aggregation over a SQL expression on the entity's own columns."""

    model_config = _STRICT
    agg: Aggregation
    expr: str
    description: str = ""


class Relationship(BaseModel):
    """Many rows of this entity to one of ``to``: ``foreign_key`` here equals ``to``'s primary key."""

    model_config = _STRICT
    to: str
    foreign_key: str


class Entity(BaseModel):
    model_config = _STRICT
    table: str
    primary_key: str
    description: str = ""
    synonyms: list[str] = Field(default_factory=list)
    relationships: list[Relationship] = Field(default_factory=list)
    dimensions: dict[str, Dimension] = Field(default_factory=dict)
    measures: dict[str, Measure] = Field(default_factory=dict)


class Metric(BaseModel):
    """``simple``: ``measure`` (``entity.measure``) with an optional ``filter`` (SQL on that entity's columns);
    ``ratio``: ``numerator`` / ``denominator`` (metric names); ``derived``: ``expr`` over metric names."""

    model_config = _STRICT
    type: MetricType = "simple"
    measure: str | None = None
    filter: str | None = None
    numerator: str | None = None
    denominator: str | None = None
    expr: str | None = None
    label: str = ""
    description: str = ""
    synonyms: list[str] = Field(default_factory=list)


class DefaultFilter(BaseModel):
    """A condition on ``entity``'s columns that queries on it carry; ``required``: leaving it out is a finding."""

    model_config = _STRICT
    name: str
    entity: str
    sql: str
    required: bool = True
    description: str = ""


class VerifiedQuery(BaseModel):
    model_config = _STRICT
    name: str
    question: str
    sql: str
    verified_by: str = ""


class SemanticModel(BaseModel):
    """One database's semantic model (the native YAML file's top level)."""

    model_config = _STRICT
    description: str = ""
    entities: dict[str, Entity] = Field(default_factory=dict)
    metrics: dict[str, Metric] = Field(default_factory=dict)
    default_filters: list[DefaultFilter] = Field(default_factory=list)
    verified_queries: list[VerifiedQuery] = Field(default_factory=list)

    def dimension(self, name: str) -> tuple[str, Dimension] | None:
        """The entity name and dimension called ``name`` (dimension names are unique in a valid model)."""
        for entity_name, entity in self.entities.items():
            if name in entity.dimensions:
                return entity_name, entity.dimensions[name]
        return None

    def measure(self, ref: str) -> tuple[str, Measure] | None:
        """``entity.measure`` resolved, or None."""
        entity_name, _, measure_name = ref.partition(".")
        entity = self.entities.get(entity_name)
        if entity is None or measure_name not in entity.measures:
            return None
        return entity_name, entity.measures[measure_name]

    def words(self) -> dict[str, tuple[str, str]]:
        """Every name and synonym (lower case) -> (kind, name): ``metric``/``dimension``/``entity``."""
        found: dict[str, tuple[str, str]] = {}
        for name, metric in self.metrics.items():
            for word in (name, name.replace("_", " "), metric.label, *metric.synonyms):
                if word:
                    found.setdefault(word.lower(), ("metric", name))
        for entity_name, entity in self.entities.items():
            for word in (entity_name, *entity.synonyms):
                found.setdefault(word.lower(), ("entity", entity_name))
            for name, dim in entity.dimensions.items():
                for word in (name, name.replace("_", " "), *dim.synonyms):
                    found.setdefault(word.lower(), ("dimension", name))
        return found

    def value_synonyms(self) -> list[tuple[str, str, str, str]]:
        """(word, table, column, stored value) for every value synonym, longest words first."""
        found = [(word, e.table, d.column or name, value) for e in self.entities.values()
                 for name, d in e.dimensions.items() for value, words in d.values.items() for word in words]
        return sorted(found, key=lambda item: -len(item[0]))

    def is_empty(self) -> bool:
        return not (self.entities or self.metrics)
