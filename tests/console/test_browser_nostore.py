"""The console of a gateway without a feedback store (access control off, loopback, as `serve --dsn` starts
by default): feedback is said to be "not configured" (no buttons that would answer 503), and nothing says
"busy" for what is a missing setting."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from gateway.api.app import create_app
from gateway.settings import AuthSettings, DatabaseSettings, LLMSettings, MagicSettings, Settings
from gateway.testing.scripted_llm import ScriptedLLM
from tests.console.conftest import ROOT, _script
from tests.console.test_browser import ask, console_errors, find, finds, visible, wait
from tests.serving import free_port

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


@pytest.fixture(scope="module")
async def bare(demo_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    with ScriptedLLM() as llm:
        _script(llm)
        settings = Settings(
            databases={"demo": DatabaseSettings(dsn=demo_dsn)}, auth=AuthSettings(enabled=False),
            magic=MagicSettings(schedule=False), rules_dir=ROOT / "rules",
            guidelines_dir=Path(tmp_path_factory.mktemp("guidelines")),
            llm=LLMSettings(base_url=llm.base_url, model="scripted-model", timeout_s=10.0, max_retries=0))
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port,
                                               log_level="warning", lifespan="on"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            if not thread.is_alive():
                raise AssertionError("the server did not start")
            await asyncio.sleep(0.05)
        try:
            yield f"http://127.0.0.1:{port}/console/"
        finally:
            server.should_exit = True
            await asyncio.to_thread(thread.join, 30)


def test_without_a_store_feedback_is_not_configured_not_busy(browser: Any, bare: str) -> None:
    browser.get(bare + "#ask")
    status = ask(browser, "What share of orders comes from each channel?")
    assert status.text == "ok"
    off = wait(browser, visible("#fb-off"), "the note about feedback")
    assert "not configured" in off.text and "busy" not in off.text
    assert not finds(browser, "#fb-right") and not finds(browser, "#fb-wrong")
    assert not finds(browser, "#answer-link")  # no audit to link to
    assert "What share of orders" in find(browser, "#ask-history").text  # this tab's questions still listed
    assert console_errors(browser) == []
