"""The /v1/ask tests' folders fixture, for the semantic layer's end-to-end tests."""

from tests.ask.conftest import dirs  # noqa: F401 - a fixture, used by name
