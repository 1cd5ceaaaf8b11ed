"""Catalog relations that expose secrets or other sessions' activity.

Matched on the relation name in any schema (a user table named like one of these is refused too, which
errs on the safe side). A database's policy can allow some through ``allowed_catalogs``.

``pg_settings`` is blocked: it shows every configuration value (file paths, connection strings of
extensions) just as ``current_setting()`` would, so it is refused for the same reason. ``pg_roles`` and
``pg_user`` stay allowed: Postgres masks their password column.
"""

from __future__ import annotations

SENSITIVE: dict[str, str] = {
    "pg_authid": "role passwords",
    "pg_shadow": "role passwords",
    "pg_user_mapping": "foreign-server credentials",
    "pg_user_mappings": "foreign-server credentials",
    "user_mapping_options": "foreign-server credentials",
    "pg_subscription": "replication connection strings",
    "pg_stat_subscription": "replication connection state",
    "pg_stat_activity": "other sessions' queries",
    "pg_stat_statements": "other sessions' queries",
    "pg_stat_statements_info": "query statistics",
    "pg_locks": "other sessions' activity",
    "pg_stat_replication": "replication clients",
    "pg_stat_wal_receiver": "replication connection strings",
    "pg_stat_ssl": "other sessions' connections",
    "pg_stat_gssapi": "other sessions' connections",
    "pg_replication_slots": "replication state",
    "pg_settings": "server configuration",
    "pg_file_settings": "server configuration files",
    "pg_hba_file_rules": "authentication rules",
    "pg_ident_file_mappings": "authentication rules",
    "pg_db_role_setting": "per-role configuration",
    "pg_config": "server build and paths",
    "pg_largeobject": "large object contents",
    "pg_largeobject_metadata": "large objects",
    "pg_prepared_xacts": "other sessions' transactions",
}
