"""What the running gateway holds: settings and the resources the Gateway (gateway.service) opened.

One instance per open Gateway (``Gateway.state``); stages receive it (or the part they need) as an argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gateway import errors
from gateway.context.cache import SchemaCache
from gateway.context.sources import ExamplesSource, FileGuidelineSource, GuidelineSource, NoExamples
from gateway.corrections import CorrectionsSink, MemoryCorrections
from gateway.execute import Target, Targets
from gateway.rules import RuleSet, RulesRegistry
from gateway.safety import Policy
from gateway.settings import Settings

if TYPE_CHECKING:
    from gateway.auth import Authenticator
    from gateway.backpressure import RateLimits
    from gateway.llm import LLMClient
    from gateway.pipeline.tally import Tally
    from gateway.semantic import SemanticModel, SemanticRegistry
    from gateway.store import Store


DEFAULT_POLICY = Policy()  # one object, so verdicts checked without a database are cached too


@dataclass
class GatewayState:
    settings: Settings
    targets: Targets
    # POST /v1/ask: the LLM client (None when no endpoint is configured) and where fixed chains go.
    llm: LLMClient | None = None
    corrections: CorrectionsSink = field(default_factory=MemoryCorrections)
    # DBA rules per database (reloaded when files change); None: no rules at all.
    rules: RulesRegistry | None = None
    # Semantic models per database (settings.semantic_dir, reloaded like the rules); None: no semantic layer.
    semantic: SemanticRegistry | None = None
    # Context sources; the feedback store replaces both with its own (active guideline version, examples).
    guidelines: GuidelineSource = None  # type: ignore[assignment]  # set in __post_init__ from settings
    examples: ExamplesSource = field(default_factory=NoExamples)
    schemas: SchemaCache = None  # type: ignore[assignment]  # set in __post_init__ from settings
    # The feedback store (audit, feedback, examples, guideline versions); None without store.dsn.
    store: Store | None = None
    # Access control: API keys checked against the store (or everyone is admin, with auth off on loopback).
    auth: Authenticator | None = None
    # Per-key (or per-address) token buckets, in memory per replica; see gateway.backpressure.
    rate_limits: RateLimits | None = None
    # Running totals behind the first- and final-pass ratio gauges (set in __post_init__).
    tally: Tally = None  # type: ignore[assignment]
    # Later capabilities (LLM client, rules, store ...) hang their resources here by name.
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.guidelines is None:
            self.guidelines = FileGuidelineSource(self.settings.guidelines_dir)
        if self.schemas is None:
            self.schemas = SchemaCache(self.settings.context)
        if self.tally is None:
            from gateway.pipeline.tally import Tally

            self.tally = Tally()

    def target(self, name: str) -> Target:
        target = self.targets.get(name)
        if target is None:
            known = ", ".join(sorted(self.targets.by_name)) or "none configured"
            raise errors.UnknownDatabase(f"no database named {name!r} (known: {known})", database=name)
        return target

    def policy(self, name: str | None) -> Policy:
        """The safety policy for a database: its settings, plus what its rules add."""
        if name is None:
            return DEFAULT_POLICY
        policy = self.target(name).settings.safety
        return self.rules.policy_for(name, policy) if self.rules is not None else policy

    def ruleset(self, name: str) -> RuleSet:
        """The rules in force for a database (empty when it has none)."""
        return self.rules.get(name) if self.rules is not None else RuleSet(database=name)

    def semantic_model(self, name: str) -> SemanticModel:
        """The semantic model in force for a database (empty without one); raises ``semantic_unavailable``
        when its files are broken and no good model was loaded before."""
        from gateway.semantic.registry import EMPTY

        return self.semantic.get(name) if self.semantic is not None else EMPTY

    def max_rows(self, name: str, requested: int | None) -> int | None:
        """The row cap for one query: the request's, lowered by the rules' ``limits.max_rows`` if set.

        ``run_query`` still caps at the database's ``limits.max_rows``; rules can only tighten it.
        """
        ruled = self.ruleset(name).limits.max_rows
        if ruled is None:
            return requested
        return min(requested, ruled) if requested is not None else ruled
