-- case: pg_authid
-- expect: catalog_not_allowed
SELECT rolname, rolpassword FROM pg_authid
-- case: pg_shadow qualified
-- expect: catalog_not_allowed
SELECT * FROM pg_catalog.pg_shadow
-- case: quoted catalog
-- expect: catalog_not_allowed
SELECT * FROM "pg_authid"
-- case: pg_user_mappings
-- expect: catalog_not_allowed
SELECT umoptions FROM pg_user_mappings
-- case: pg_stat_activity other sessions' queries
-- expect: catalog_not_allowed
SELECT query FROM pg_stat_activity
-- case: pg_stat_statements
-- expect: catalog_not_allowed
SELECT query FROM public.pg_stat_statements
-- case: pg_settings
-- expect: catalog_not_allowed
SELECT name, setting FROM pg_settings
-- case: pg_file_settings
-- expect: catalog_not_allowed
SELECT * FROM pg_file_settings
-- case: pg_hba_file_rules
-- expect: catalog_not_allowed
SELECT * FROM pg_hba_file_rules
-- case: pg_largeobject
-- expect: catalog_not_allowed
SELECT data FROM pg_largeobject
-- case: pg_stat_replication
-- expect: catalog_not_allowed
SELECT * FROM pg_stat_replication
-- case: catalog in subquery
-- expect: catalog_not_allowed
SELECT (SELECT rolpassword FROM pg_authid LIMIT 1)
-- case: catalog in cte
-- expect: catalog_not_allowed
WITH a AS (SELECT * FROM pg_shadow) SELECT count(*) FROM a
-- case: catalog in lateral
-- expect: catalog_not_allowed
SELECT * FROM orders o, LATERAL (SELECT query FROM pg_stat_activity WHERE pid = o.id) q
-- case: catalog in exists
-- expect: catalog_not_allowed
SELECT 1 WHERE EXISTS (SELECT 1 FROM pg_authid WHERE rolsuper)
-- case: catalog in explain
-- expect: catalog_not_allowed
EXPLAIN SELECT * FROM pg_authid
-- case: catalog in case branch
-- expect: catalog_not_allowed
SELECT CASE WHEN true THEN (SELECT rolpassword FROM pg_authid LIMIT 1) END
-- case: catalog in union arm
-- expect: catalog_not_allowed
SELECT usename::text FROM pg_user UNION SELECT passwd FROM pg_shadow
-- case: pg_prepared_statements shows another client's SQL
-- expect: catalog_not_allowed
SELECT statement FROM pg_prepared_statements
-- case: pg_cursors
-- expect: catalog_not_allowed
SELECT statement FROM pg_catalog.pg_cursors
-- case: pg_stats most common values
-- expect: catalog_not_allowed
SELECT most_common_vals FROM pg_stats WHERE tablename = 'customers'
-- case: pg_statistic
-- expect: catalog_not_allowed
SELECT stavalues1 FROM pg_statistic
-- case: pg_stats_ext
-- expect: catalog_not_allowed
SELECT * FROM pg_stats_ext
-- case: pg_stats_ext_exprs
-- expect: catalog_not_allowed
SELECT * FROM pg_catalog.pg_stats_ext_exprs
-- case: pg_statistic_ext_data
-- expect: catalog_not_allowed
SELECT * FROM pg_statistic_ext_data
-- case: pg_stat_user_tables
-- expect: catalog_not_allowed
SELECT relname, n_live_tup FROM pg_stat_user_tables
-- case: pg_stat_database
-- expect: catalog_not_allowed
SELECT * FROM pg_stat_database
-- case: pg_foreign_server
-- expect: catalog_not_allowed
SELECT srvoptions FROM pg_foreign_server
-- case: information_schema user mapping options
-- expect: catalog_not_allowed
SELECT * FROM information_schema.user_mapping_options
-- case: information_schema foreign servers
-- expect: catalog_not_allowed
SELECT * FROM information_schema.foreign_servers
-- case: pg_roles is not on the allowlist
-- expect: catalog_not_allowed
SELECT rolname, rolconfig FROM pg_roles
-- case: a future catalog view is refused until allowed
-- expect: catalog_not_allowed
SELECT * FROM pg_catalog.pg_stat_something_new
-- case: an unqualified unknown pg_ name
-- expect: catalog_not_allowed
SELECT * FROM pg_whatever
-- case: upper-case catalog schema
-- expect: catalog_not_allowed
SELECT * FROM "PG_CATALOG"."PG_STATS"
-- case: toast schema
-- expect: catalog_not_allowed
SELECT * FROM pg_toast.pg_toast_2619
-- case: temp schema
-- expect: catalog_not_allowed
SELECT * FROM pg_temp.t
-- case: an unknown information_schema view
-- expect: catalog_not_allowed
SELECT * FROM information_schema.something_new
-- case: extension view in a user schema
-- expect: catalog_not_allowed
SELECT query FROM extensions.pg_stat_statements
-- case: information_schema columns names hidden columns
-- expect: catalog_not_allowed
-- policy: {"hidden_columns": ["customers.email"]}
SELECT column_name FROM information_schema.columns WHERE table_name = 'customers'
-- case: pg_attribute names hidden columns
-- expect: catalog_not_allowed
-- policy: {"hidden_columns": ["customers.email"]}
SELECT attname FROM pg_attribute WHERE attrelid = 'customers'::regclass
-- case: pg_class names hidden tables
-- expect: catalog_not_allowed
-- policy: {"hidden_tables": ["salaries"]}
SELECT relname FROM pg_class
-- case: pg_description carries comments of hidden columns
-- expect: catalog_not_allowed
-- policy: {"hidden_columns": ["customers.email"]}
SELECT description FROM pg_description
-- case: catalog in a join alias
-- expect: catalog_not_allowed
SELECT j.* FROM (pg_stats s JOIN pg_class c ON c.relname = s.tablename) AS j
-- case: catalog with a column alias list
-- expect: catalog_not_allowed
SELECT v.x FROM pg_settings AS v(x)
-- case: pg_type names the row types of hidden tables
-- expect: catalog_not_allowed
-- policy: {"hidden_tables": ["salaries"]}
SELECT typname FROM pg_type
