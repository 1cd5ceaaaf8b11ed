"""Which PostgreSQL functions a query may call: a deny list with reasons, and an allowlist (and which of
them return a set of rows, :data:`SET_RETURNING`).

Names are Postgres's own (as pglast reads them: unquoted identifiers folded to lower case), never
sqlglot's normalised names. The allowlist holds side-effect-free built-ins only; anything else is
``function_not_allowed`` unless a database's policy lists it in ``extra_functions``.
"""

from __future__ import annotations

# Exact names that are refused with a reason, checked before the allowlist so the message is specific.
BLOCKED: dict[str, str] = {
    **dict.fromkeys(("pg_sleep", "pg_sleep_for", "pg_sleep_until"), "sleep"),
    **dict.fromkeys(
        (
            "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_stat_file", "pg_ls_logdir",
            "pg_ls_waldir", "pg_ls_tmpdir", "pg_ls_archive_statusdir", "pg_ls_logicalmapdir",
            "pg_ls_logicalsnapdir", "pg_ls_replslotdir", "pg_current_logfile", "pg_file_write",
            "pg_file_rename", "pg_file_unlink", "pg_file_sync",
        ),
        "file_access",
    ),
    **dict.fromkeys(("loread", "lowrite"), "large_object"),
    **dict.fromkeys(("set_config", "current_setting", "pg_settings_get_flags"), "config_access"),
    **dict.fromkeys(("nextval", "setval", "currval", "lastval", "pg_sequence_last_value"), "sequence"),
    **dict.fromkeys(
        (
            "pg_cancel_backend", "pg_terminate_backend", "pg_reload_conf", "pg_rotate_logfile",
            "pg_signal_backend", "pg_log_backend_memory_contexts", "pg_promote", "pg_switch_wal",
            "pg_create_restore_point", "pg_backup_start", "pg_backup_stop", "pg_wal_replay_pause",
            "pg_wal_replay_resume", "pg_log_standby_snapshot",
        ),
        "backend_signal",
    ),
    **dict.fromkeys(
        (
            "query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema", "cursor_to_xml",
            "cursor_to_xmlschema", "table_to_xml", "table_to_xmlschema", "table_to_xml_and_xmlschema",
            "schema_to_xml", "schema_to_xmlschema", "schema_to_xml_and_xmlschema", "database_to_xml",
            "database_to_xmlschema", "database_to_xml_and_xmlschema", "ts_stat", "ts_rewrite",
        ),
        "sql_in_text",
    ),
    "pg_notify": "notify",
    "setseed": "session_state",
    "txid_current": "transaction_id",
    "pg_current_xact_id": "transaction_id",
}

# Prefixes of whole families refused with a reason (large objects, dblink, advisory locks ...).
BLOCKED_PREFIXES: tuple[tuple[str, str], ...] = (
    ("lo_", "large_object"),
    ("dblink", "dblink"),
    ("pg_advisory_", "advisory_lock"),
    ("pg_try_advisory_", "advisory_lock"),
    ("pg_stat_reset", "stats_reset"),
    ("pg_replication_origin_", "replication"),
    ("pg_create_logical_replication_slot", "replication"),
    ("pg_create_physical_replication_slot", "replication"),
    ("pg_drop_replication_slot", "replication"),
    ("pg_logical_", "replication"),
    ("pg_replication_slot_advance", "replication"),
    ("pg_copy_", "replication"),
)

AGGREGATES: frozenset[str] = frozenset(
    """
    avg bit_and bit_or bit_xor bool_and bool_or count every max min sum any_value
    array_agg string_agg json_agg jsonb_agg json_agg_strict jsonb_agg_strict json_object_agg
    jsonb_object_agg json_object_agg_strict jsonb_object_agg_strict json_object_agg_unique
    jsonb_object_agg_unique json_object_agg_unique_strict jsonb_object_agg_unique_strict
    range_agg range_intersect_agg xmlagg corr covar_pop covar_samp regr_avgx regr_avgy regr_count
    regr_intercept regr_r2 regr_slope regr_sxx regr_sxy regr_syy stddev stddev_pop stddev_samp
    variance var_pop var_samp mode percentile_cont percentile_disc
    """.split()
)

WINDOW: frozenset[str] = frozenset(
    """
    row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
    """.split()
)

_SCALAR = """
    abs cbrt ceil ceiling degrees div exp factorial floor gcd lcm ln log log10 min_scale mod pi power
    radians round scale sign sqrt trim_scale trunc width_bucket erf erfc random random_normal
    acos acosd asin asind atan atand atan2 atan2d cos cosd cot cotd sin sind tan tand sinh cosh tanh
    asinh acosh atanh numeric_inc
    ascii bit_length btrim char_length character_length chr concat concat_ws format initcap left length
    lower lpad ltrim md5 normalize is_normalized octet_length overlay position quote_ident quote_literal
    quote_nullable regexp_count regexp_instr regexp_like regexp_match regexp_matches regexp_replace
    regexp_split_to_array regexp_split_to_table regexp_substr repeat replace reverse right rpad rtrim
    split_part starts_with string_to_array string_to_table strpos substr substring translate unistr upper
    to_hex to_bin to_oct encode decode sha224 sha256 sha384 sha512 convert_from convert_to casefold
    crc32 crc32c similar_to_escape like_escape get_byte get_bit bit_count
    age clock_timestamp date_add date_bin date_part date_subtract date_trunc extract isfinite
    justify_days justify_hours justify_interval make_date make_interval make_time make_timestamp
    make_timestamptz now statement_timestamp timeofday transaction_timestamp to_char to_date to_number
    to_timestamp timezone overlaps
    to_json to_jsonb array_to_json row_to_json json_build_array jsonb_build_array json_build_object
    jsonb_build_object json_object jsonb_object json_array_elements jsonb_array_elements
    json_array_elements_text jsonb_array_elements_text json_array_length jsonb_array_length json_each
    jsonb_each json_each_text jsonb_each_text json_extract_path jsonb_extract_path json_extract_path_text
    jsonb_extract_path_text json_object_keys jsonb_object_keys json_populate_record jsonb_populate_record
    json_populate_recordset jsonb_populate_recordset json_to_record jsonb_to_record json_to_recordset
    jsonb_to_recordset json_strip_nulls jsonb_strip_nulls jsonb_set jsonb_set_lax jsonb_insert
    jsonb_pretty json_typeof jsonb_typeof jsonb_path_exists jsonb_path_match jsonb_path_query
    jsonb_path_query_array jsonb_path_query_first jsonb_path_exists_tz jsonb_path_match_tz
    jsonb_path_query_tz jsonb_path_query_array_tz jsonb_path_query_first_tz jsonb_populate_record_valid
    to_tsvector to_tsquery plainto_tsquery phraseto_tsquery websearch_to_tsquery ts_rank ts_rank_cd
    ts_headline setweight strip tsvector_to_array array_to_tsvector numnode querytree ts_delete ts_filter
    array_append array_cat array_dims array_fill array_length array_lower array_ndims array_position
    array_positions array_prepend array_remove array_replace array_reverse array_sample array_shuffle
    array_sort array_to_string array_upper cardinality trim_array unnest generate_subscripts
    generate_series num_nulls num_nonnulls
    isempty lower_inc upper_inc lower_inf upper_inf range_merge multirange int4range int8range numrange
    tsrange tstzrange daterange int4multirange int8multirange nummultirange tsmultirange tstzmultirange
    datemultirange
    date time timestamp timestamptz interval text varchar bpchar numeric int2 int4 int8 float4 float8
    bool int smallint bigint integer real
    pg_typeof pg_size_pretty pg_size_bytes gen_random_uuid uuidv4 uuidv7 uuid_extract_timestamp
    uuid_extract_version pg_collation_for current_database current_schema current_schemas
    host hostmask masklen netmask network family abbrev broadcast inet_merge inet_same_family
"""

ALLOWED: frozenset[str] = AGGREGATES | WINDOW | frozenset(_SCALAR.split())

# Functions Postgres accepts in column notation over a whole row: ``c.to_jsonb`` is ``to_jsonb(c)`` when c has
# no column of that name (their one argument is record, composite, anyelement, "any" or alike). Taken from
# pg_proc of Postgres 18; the check cannot tell such a call from a column, so the lineage treats ``c.NAME``
# as a read of the whole row too (see gateway.safety.lineage).
WHOLE_ROW_FUNCTIONS: frozenset[str] = frozenset(
    """
    any_out any_value anycompatible_out anycompatiblenonarray_out anyelement_out anynonarray_out array_agg
    concat count cume_dist dense_rank first_value hash_record hash_record_extended json_agg json_agg_strict
    json_build_array json_build_object jsonb_agg jsonb_agg_strict jsonb_build_array jsonb_build_object lag
    last_value lead max min mode num_nonnulls num_nulls percent_rank pg_collation_for pg_column_compression
    pg_column_size pg_column_toast_chunk_id pg_restore_attribute_stats pg_restore_relation_stats pg_typeof
    quote_literal quote_nullable rank record_out record_send row_to_json to_json to_jsonb
    """.split()
)


def blocked_reason(name: str) -> str | None:
    """Why a function (bare lower-case name) is refused outright, or None.

    >>> blocked_reason("pg_advisory_xact_lock"), blocked_reason("lower")
    ('advisory_lock', None)
    """
    reason = BLOCKED.get(name)
    if reason is not None:
        return reason
    for prefix, why in BLOCKED_PREFIXES:
        if name.startswith(prefix):
            return why
    return None


# Operators of core PostgreSQL (pg_catalog) that the static check lets through: each runs a built-in function
# for built-in types. An operator is a function call in disguise: one not listed here (an extension's, such
# as pg_trgm's <% or <->) is refused like a function that is not on the allowlist.
OPERATORS: frozenset[str] = frozenset(
    """
    + - * / % ^ |/ ||/ @ & | # ~ << >> = <> != < > <= >= || ~~ ~~* !~~ !~~* ~* !~ !~* @> <@ && &< &> -|-
    ? ?| ?& -> ->> #> #>> #- @? @@ @@@ ^@ <<= >>=
    """.split()
)
# Symbols an extension commonly defines on text too (pg_trgm's text % text runs similarity()): allowed only
# when an operand is visibly a number, which selects the core operator.
NUMERIC_ONLY_OPERATORS: frozenset[str] = frozenset({"%"})


# Functions that return a set of rows: each call multiplies the rows of its FROM item or target list.
SET_RETURNING = frozenset("""
    generate_series generate_subscripts unnest string_to_table regexp_split_to_table regexp_matches
    json_array_elements jsonb_array_elements json_array_elements_text jsonb_array_elements_text json_each
    jsonb_each json_each_text jsonb_each_text json_object_keys jsonb_object_keys jsonb_path_query
    jsonb_path_query_tz json_populate_recordset jsonb_populate_recordset json_to_recordset jsonb_to_recordset
""".split())
