"""The demo's banner tells what is true of this start: the LLM hint only when no LLM is configured."""

from __future__ import annotations

from pathlib import Path

from gateway.demo.run import demo_banner, demo_settings


def test_the_banner_names_the_configured_llm_and_gives_no_hint_to_set_one(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("NL2SQL_LLM__MODEL", "qwen2.5-coder")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    settings = demo_settings("postgresql://nl2sql_reader@/demo?host=/tmp/x", "postgresql://postgres@/s", 8123)
    text = demo_banner(settings, Path("/data/pgdata"), Path("/data/pgdata/demo.toml"))
    assert "LLM:           qwen2.5-coder at http://127.0.0.1:11434/v1" in text
    assert "set OPENAI_BASE_URL" not in text and "need an LLM" not in text
    assert "http://127.0.0.1:8123/console/" in text


def test_without_an_llm_the_banner_says_what_to_set(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    for name in ("NL2SQL_LLM__MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NL2SQL_CONFIG", "")
    settings = demo_settings("postgresql://nl2sql_reader@/demo?host=/tmp/x", "postgresql://postgres@/s", 8000)
    text = demo_banner(settings, Path("/data/pgdata"), Path("/data/pgdata/demo.toml"))
    assert "set OPENAI_BASE_URL" in text and "LLM:           not configured" in text
