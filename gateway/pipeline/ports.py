"""What the pipeline's orchestrators need of the open gateway, as protocols (the
gateway's frozen resources, gateway.state, are each of them).

Stages take plain values (an :class:`~gateway.llm.client.LLM`, a ``RuleSet``, a ``Target`` ...). The orchestrators
that run a whole question (gateway.pipeline.loop and its kin), the template path and MAGIC take one of
these views instead of the state, so their signatures say which resources they read, and nothing can rebind
a resource through them (every member is read-only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from gateway.context.build import Sources
from gateway.sql.client import Databases

if TYPE_CHECKING:
    from gateway.context.cache import SchemaCache
    from gateway.context.sources import ExamplesSource, GuidelineSource
    from gateway.execute import Targets
    from gateway.learning.corrections import CorrectionsSink
    from gateway.learning.templates import Template
    from gateway.llm.client import LLM
    from gateway.pipeline.tally import Tally
    from gateway.pipeline.trusted import Domain
    from gateway.semantic import SemanticModel
    from gateway.settings import Settings
    from gateway.store import Store

__all__ = ["Asking", "Databases", "Sources", "Stored", "Templates", "Verified"]


class Stored(Protocol):
    """The feedback store, when one is configured."""

    @property
    def store(self) -> Store | None: ...


class Verified(Stored, Protocol):
    """Answers from approved examples: the examples source and the tally of outcomes."""

    @property
    def examples(self) -> ExamplesSource: ...

    @property
    def tally(self) -> Tally: ...


class Templates(Databases, Verified, Protocol):
    """The template path: the databases, the schema views the value domains come from, the stored
    templates and the caches of both."""

    @property
    def settings(self) -> Settings: ...

    @property
    def targets(self) -> Targets: ...

    @property
    def schemas(self) -> SchemaCache: ...

    @property
    def template_cache(self) -> dict[str, tuple[float, list[Template]]]: ...

    @property
    def domain_cache(self) -> dict[tuple[str, str | None, tuple[tuple[str, str], ...]], tuple[object, Domain]]: ...


class Asking(Templates, Sources, Protocol):
    """A whole question: the template path plus the context sources, the LLM and the semantic models."""

    @property
    def guidelines(self) -> GuidelineSource: ...

    @property
    def corrections(self) -> CorrectionsSink: ...

    @property
    def llm(self) -> LLM | None: ...

    def semantic_model(self, name: str) -> SemanticModel: ...
