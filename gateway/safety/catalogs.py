"""Which system catalogs a query may read: a short allowlist, everything else refused.

A relation is a catalog when its schema is ``pg_catalog``, ``information_schema`` or any other ``pg_*``
schema (``pg_toast``, ``pg_temp_N`` ...), or when its name starts with ``pg_`` in any schema (unqualified,
``pg_catalog`` is searched first; extensions put views such as ``pg_stat_statements`` in user schemas).
Such a relation is allowed only from this list or from the database's ``allowed_catalogs``; a view that a
future Postgres release adds stays refused until someone allows it. Refused by default, among others:
statistics (``pg_stats``, ``pg_statistic*``, ``pg_stats_ext*``: most common values and histograms are the
data itself), prepared statements and cursors (``pg_prepared_statements`` holds another client's SQL on a
pooled connection), settings, other sessions' activity (``pg_stat_*``, ``pg_locks``), roles, foreign
servers and user mappings, large objects.

Two tiers:

- ``ALWAYS`` describe types, functions and other objects that hold no table or column names;
- ``SCHEMA`` list tables, columns, constraints and comments. They would name hidden tables and columns,
  so they are allowed only while the database's policy hides nothing. Clients discover the schema through
  ``GET /v1/databases/{name}/schema``, which leaves hidden objects out.

Names are matched case-insensitively, bare (``pg_class``) or qualified (``pg_catalog.pg_class``).
"""

from __future__ import annotations

ALWAYS: frozenset[str] = frozenset(
    """
    pg_am pg_cast pg_collation pg_language pg_operator pg_opclass pg_opfamily pg_range
    pg_timezone_abbrevs pg_timezone_names pg_ts_config pg_ts_dict pg_ts_parser pg_ts_template
    information_schema.character_sets information_schema.collations
    """.split()
)

SCHEMA: frozenset[str] = frozenset(
    """
    pg_namespace pg_class pg_attribute pg_attrdef pg_type pg_enum pg_index pg_constraint pg_description
    pg_inherits pg_proc pg_tables pg_views pg_matviews pg_indexes pg_extension
    information_schema.schemata information_schema.tables information_schema.columns information_schema.views
    information_schema.table_constraints information_schema.key_column_usage
    information_schema.referential_constraints information_schema.constraint_column_usage
    information_schema.check_constraints information_schema.element_types information_schema.domains
    information_schema.routines information_schema.parameters
    """.split()
)

_CATALOG_SCHEMAS = frozenset({"pg_catalog", "information_schema"})


def catalog_name(schema: str | None, name: str) -> str | None:
    """The allowlist key of a catalog relation (``pg_class``, ``information_schema.tables``), or None.

    >>> catalog_name(None, "pg_stats"), catalog_name("information_schema", "columns")
    ('pg_stats', 'information_schema.columns')
    >>> catalog_name("PUBLIC", "orders") is None, catalog_name("pg_toast", "pg_toast_2619")
    (True, 'pg_toast.pg_toast_2619')
    >>> catalog_name("public", "pg_stat_statements")
    'pg_stat_statements'
    """
    schema = schema.casefold() if schema else None
    name = name.casefold()
    if schema == "pg_catalog":
        return name
    if schema is not None and (schema in _CATALOG_SCHEMAS or schema.startswith("pg_")):
        return f"{schema}.{name}"
    # Unqualified, pg_catalog comes first; in a user schema, a pg_* name is an extension's view
    # (public.pg_stat_statements, pg_buffercache ...), which is refused alike.
    return name if name.startswith("pg_") else None


def allowed(key: str, extra: frozenset[str], hides_anything: bool) -> bool:
    """Whether the catalog ``key`` may be read under a policy with ``extra`` allowed_catalogs."""
    if key in ALWAYS or key in extra or f"pg_catalog.{key}" in extra:
        return True
    return key in SCHEMA and not hides_anything
