"""A GatewayState on the demo database (real Postgres), with a rules folder of the test's own."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from gateway.context.build import prepare
from gateway.context.cache import SchemaCache
from gateway.context.sources import FileGuidelineSource
from gateway.execute import Targets
from gateway.rules import RulesRegistry
from gateway.settings import ContextSettings, DatabaseSettings, Settings
from gateway.state import GatewayState

ROOT = Path(__file__).resolve().parents[2]

MakeState = Callable[..., "AsyncIterator[GatewayState]"]


@pytest.fixture
async def make_state(demo_admin_dsn: str, tmp_path: Path) -> AsyncIterator[Callable[..., object]]:
    """``await make_state(rules_yaml=None, **context_settings)`` -> a GatewayState, closed after the test.

    As the superuser: the demo reader is granted only the columns rules/demo.yaml leaves visible, and these
    tests are about what the rules (written per test) keep out of the context.
    """
    demo_dsn = demo_admin_dsn
    opened: list[Targets] = []

    async def make(rules_yaml: str | None = None, **context: object) -> GatewayState:
        rules_dir = tmp_path / "rules"
        rules_dir.mkdir(exist_ok=True)
        if rules_yaml is not None:
            (rules_dir / "demo.yaml").write_text(rules_yaml)
        settings = Settings(databases={"demo": DatabaseSettings(dsn=demo_dsn, pool_max_size=4)},
                            context=ContextSettings(**context), rules_dir=rules_dir,
                            guidelines_dir=ROOT / "guidelines")
        targets = await Targets.open(settings)
        opened.append(targets)
        return GatewayState(settings=settings, targets=targets, rules=RulesRegistry(rules_dir),
                            schemas=SchemaCache(settings.context, prepare),
                            guidelines=FileGuidelineSource(settings.guidelines_dir))

    yield make
    for targets in opened:
        await targets.close()
