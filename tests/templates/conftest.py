"""The row-policy tests' two tenant databases, for templates under claims and Postgres roles."""

from tests.rowpolicy.conftest import tenants  # noqa: F401 - a session fixture shared with tests/rowpolicy
