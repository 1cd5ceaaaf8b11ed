-- case: access methods and casts are always allowed
-- policy: {"hidden_columns": ["customers.email"]}
SELECT amname FROM pg_am UNION ALL SELECT castcontext::text FROM pg_cast
-- case: time zones
-- policy: {"hidden_columns": ["customers.email"]}
SELECT name, utc_offset FROM pg_timezone_names WHERE name LIKE 'Europe/%'
-- case: qualified collations
-- policy: {"hidden_columns": ["customers.email"]}
SELECT collname FROM pg_catalog.pg_collation LIMIT 5
-- case: information_schema tables while nothing is hidden
SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'
-- case: information_schema columns while nothing is hidden
SELECT column_name FROM information_schema.columns WHERE table_name = 'customers'
-- case: pg_attribute while nothing is hidden
SELECT attname FROM pg_attribute WHERE attrelid = 'customers'::regclass AND attnum > 0
-- case: a catalog the policy allows
-- policy: {"allowed_catalogs": ["pg_catalog.pg_stat_user_tables"], "hidden_columns": ["customers.email"]}
SELECT relname, n_live_tup FROM pg_stat_user_tables
-- case: a schema catalog the policy allows although it hides columns
-- policy: {"allowed_catalogs": ["information_schema.tables"], "hidden_columns": ["customers.email"]}
SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'
-- case: a user table whose name only contains pg
SELECT count(*) FROM app_pg_metrics
