"""Guarded execution on the target databases (the only layer besides the store that talks to Postgres)."""

from gateway.execute.pool import Target, Targets
from gateway.execute.run import Column, QueryResult, run_query

__all__ = ["Column", "QueryResult", "Target", "Targets", "run_query"]
