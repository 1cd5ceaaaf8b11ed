"""What the running gateway holds: settings and the resources the app's lifespan opened.

One instance lives on ``app.state.gateway``; stages receive it (or the part they need) as an argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gateway import errors
from gateway.corrections import CorrectionsSink, MemoryCorrections
from gateway.execute import Target, Targets
from gateway.safety import Policy
from gateway.settings import Settings

if TYPE_CHECKING:
    from gateway.llm import LLMClient


@dataclass
class GatewayState:
    settings: Settings
    targets: Targets
    # POST /v1/ask: the LLM client (None when no endpoint is configured) and where fixed chains go.
    llm: LLMClient | None = None
    corrections: CorrectionsSink = field(default_factory=MemoryCorrections)
    # Later capabilities (LLM client, rules, store ...) hang their resources here by name.
    extras: dict[str, Any] = field(default_factory=dict)

    def target(self, name: str) -> Target:
        target = self.targets.get(name)
        if target is None:
            known = ", ".join(sorted(self.targets.by_name)) or "none configured"
            raise errors.UnknownDatabase(f"no database named {name!r} (known: {known})", database=name)
        return target

    def policy(self, name: str | None) -> Policy:
        """The safety policy for a database: its settings, plus what its rules add."""
        if name is None:
            return Policy()
        policy = self.target(name).settings.safety
        extend = self.extras.get("policy_extender")
        return extend(name, policy) if extend else policy
