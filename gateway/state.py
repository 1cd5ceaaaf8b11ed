"""What the running gateway holds: settings and the resources the Gateway (gateway.service) opened.

One frozen instance per open Gateway (``Gateway.state``), built in one place (``Gateway._open``); the
orchestrators (gateway.pipeline.loop and its kin) hold it, and hand each stage the parts it uses.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gateway import errors
from gateway.context.cache import SchemaCache
from gateway.context.sources import ExamplesSource, GuidelineSource, NoExamples
from gateway.execute import Target, Targets
from gateway.learning.corrections import CorrectionsSink, MemoryCorrections
from gateway.rules import RuleSet, RulesRegistry
from gateway.safety import Policy
from gateway.settings import Settings

if TYPE_CHECKING:
    from gateway.auth import Authenticator
    from gateway.learning.templates import Template
    from gateway.llm.client import LLMClient
    from gateway.pipeline.tally import Tally
    from gateway.pipeline.trusted import Domain
    from gateway.rules.grants import PrivilegeBoard
    from gateway.rules.row_filters import Relation
    from gateway.semantic import SemanticModel, SemanticRegistry
    from gateway.serving.backpressure import RateLimits
    from gateway.store import Store
    from gateway.store.changes import ChangeFeed


DEFAULT_POLICY = Policy()  # one object, so verdicts checked without a database are cached too


@dataclass(frozen=True, eq=False)
class GatewayState:
    """Everything one open Gateway holds, built once in ``Gateway._open`` and never rebound.

    What changes while it runs lives inside the fields that are made for it (the caches, the tally, the
    latest privilege report, the registries that reload their files), never as a new attribute.
    """

    settings: Settings
    targets: Targets
    # Schema snapshots per database, role and row policy (refreshed in the background; closed before the pools).
    schemas: SchemaCache
    # Context sources: the file guideline, or the store's active version over it; approved examples.
    guidelines: GuidelineSource
    examples: ExamplesSource = field(default_factory=NoExamples)
    # Where fixed chains go (the store's table with one, else memory).
    corrections: CorrectionsSink = field(default_factory=MemoryCorrections)
    # POST /v1/ask: the LLM client (None when no endpoint is configured).
    llm: LLMClient | None = None
    # DBA rules per database (reloaded when files change); None: no rules at all.
    rules: RulesRegistry | None = None
    # Semantic models per database (settings.semantic_dir, reloaded like the rules); None: no semantic layer.
    semantic: SemanticRegistry | None = None
    # The feedback store (audit, feedback, examples, guideline versions); None without store.dsn.
    store: Store | None = None
    # Access control: API keys checked against the store (or everyone is admin, with auth off on loopback).
    auth: Authenticator | None = None
    # Per-key (or per-address) token buckets, in memory per replica; see gateway.serving.backpressure.
    rate_limits: RateLimits | None = None
    # What other replicas change in the store reaches this one through it; None without a store.
    changes: ChangeFeed | None = None
    # Running totals behind the first- and final-pass ratio gauges.
    tally: Tally = field(default_factory=lambda: _tally())
    # The last privilege check (start-up, then again when the rules it was made against were reloaded).
    privileges: PrivilegeBoard = field(default_factory=lambda: _board())
    # Clock time the gateway opened at: uptime on the console's Status page (GET /v1/about).
    started_at: float = field(default_factory=time.time)
    # Per-database caches of the stages (see gateway.sql.row_policy and gateway.pipeline.trusted).
    relation_cache: dict[str, tuple[float, tuple[Relation, ...]]] = field(default_factory=dict)
    template_cache: dict[str, tuple[float, list[Template]]] = field(default_factory=dict)
    domain_cache: dict[tuple[str, str | None, tuple[tuple[str, str], ...]], tuple[object, Domain]] = \
        field(default_factory=dict)

    def target(self, name: str) -> Target:
        return target_of(self.targets, name)

    def policy(self, name: str | None) -> Policy:
        """The safety policy for a database: its settings, plus what its rules add."""
        return policy_of(self.targets, self.rules, name)

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


def _tally() -> Tally:
    from gateway.pipeline.tally import Tally

    return Tally()


def _board() -> PrivilegeBoard:
    from gateway.rules.grants import PrivilegeBoard

    return PrivilegeBoard()


def target_of(targets: Targets, name: str) -> Target:
    """The target named ``name``; raises ``unknown_database`` naming the known ones."""
    target = targets.get(name)
    if target is None:
        known = ", ".join(sorted(targets.by_name)) or "none configured"
        raise errors.UnknownDatabase(f"no database named {name!r} (known: {known})", database=name)
    return target


def policy_of(targets: Targets, rules: RulesRegistry | None, name: str | None) -> Policy:
    """The safety policy for a database: its settings, plus what its rules add (the default without one)."""
    if name is None:
        return DEFAULT_POLICY
    policy = target_of(targets, name).settings.safety
    return rules.policy_for(name, policy) if rules is not None else policy
