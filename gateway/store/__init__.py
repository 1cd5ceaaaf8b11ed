"""The gateway's own database: request audit, corrections, feedback, verified examples, guideline versions.

With ``gateway.execute`` this is the only layer that talks to Postgres (imports asyncpg). Repositories are
modules of small functions over a :data:`~gateway.store.pool.Db` (the pool, or a connection inside
:meth:`Store.transaction`).
"""

from gateway.store.pool import Db, Store

__all__ = ["Db", "Store"]
