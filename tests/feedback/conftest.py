"""The feedback tests reuse the MAGIC fixtures (scripted LLM server per session)."""

from tests.magic.conftest import llm, llm_server  # noqa: F401
