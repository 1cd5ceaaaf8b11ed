-- case: pg_sleep in select list
-- expect: function_blocked
SELECT pg_sleep(10)
-- case: pg_sleep_for
-- expect: function_blocked
SELECT pg_sleep_for('5 minutes')
-- case: pg_sleep_until
-- expect: function_blocked
SELECT pg_sleep_until(now() + interval '1 hour')
-- case: schema-qualified sleep
-- expect: function_blocked
SELECT pg_catalog.pg_sleep(1)
-- case: quoted sleep
-- expect: function_blocked
SELECT "pg_sleep"(1)
-- case: upper-case quoted sleep
-- expect: function_blocked
SELECT "PG_SLEEP"(1)
-- case: upper-case unquoted sleep
-- expect: function_blocked
SELECT PG_SLEEP(1)
-- case: sleep in where
-- expect: function_blocked
SELECT * FROM orders WHERE pg_sleep(1) IS NOT NULL
-- case: sleep in case branch
-- expect: function_blocked
SELECT CASE WHEN amount > 100 THEN pg_sleep(1)::text ELSE 'x' END FROM orders
-- case: sleep in subquery
-- expect: function_blocked
SELECT * FROM (SELECT pg_sleep(1)) s
-- case: sleep in cte
-- expect: function_blocked
WITH s AS (SELECT pg_sleep(1)) SELECT * FROM s
-- case: sleep in lateral
-- expect: function_blocked
SELECT * FROM orders o CROSS JOIN LATERAL (SELECT pg_sleep(1) WHERE o.id > 0) s
-- case: sleep as from-clause function
-- expect: function_blocked
SELECT * FROM pg_sleep(1)
-- case: sleep in scalar subquery in select list
-- expect: function_blocked
SELECT (SELECT pg_sleep(1)) AS x FROM orders
-- case: sleep in order by
-- expect: function_blocked
SELECT id FROM orders ORDER BY pg_sleep(1)
-- case: sleep in join condition
-- expect: function_blocked
SELECT * FROM a JOIN b ON a.id = b.id AND pg_sleep(1) IS NULL
-- case: sleep in having
-- expect: function_blocked
SELECT region FROM orders GROUP BY region HAVING count(pg_sleep(1)) > 0
-- case: sleep in explain
-- expect: function_blocked
EXPLAIN SELECT pg_sleep(1)
-- case: sleep in union arm
-- expect: function_blocked
SELECT 1 UNION ALL SELECT pg_sleep(1)::int
-- case: sleep in values
-- expect: function_blocked
VALUES (pg_sleep(1))
-- case: sleep in exists
-- expect: function_blocked
SELECT 1 WHERE EXISTS (SELECT pg_sleep(1))
-- case: sleep in filter
-- expect: function_blocked
SELECT count(*) FILTER (WHERE pg_sleep(1) IS NULL) FROM orders
-- case: sleep in window
-- expect: function_blocked
SELECT row_number() OVER (ORDER BY pg_sleep(1)) FROM orders
-- case: read file
-- expect: function_blocked
SELECT pg_read_file('/etc/passwd')
-- case: read binary file
-- expect: function_blocked
SELECT pg_read_binary_file('postgresql.conf')
-- case: ls dir
-- expect: function_blocked
SELECT * FROM pg_ls_dir('.')
-- case: stat file
-- expect: function_blocked
SELECT pg_stat_file('pg_hba.conf')
-- case: large object import
-- expect: function_blocked
SELECT lo_import('/etc/passwd')
-- case: large object export
-- expect: function_blocked
SELECT lo_export(1234, '/tmp/x')
-- case: large object get
-- expect: function_blocked
SELECT lo_get(1234)
-- case: loread
-- expect: function_blocked
SELECT loread(0, 10)
-- case: dblink
-- expect: function_blocked
SELECT * FROM dblink('host=evil', 'DELETE FROM x') AS t(a int)
-- case: dblink_exec
-- expect: function_blocked
SELECT dblink_exec('DROP TABLE x')
-- case: dblink qualified
-- expect: function_blocked
SELECT public.dblink_connect('x')
-- case: set_config
-- expect: function_blocked
SELECT set_config('statement_timeout', '0', false)
-- case: current_setting reads secrets
-- expect: function_blocked
SELECT current_setting('ssl_key_file')
-- case: advisory lock
-- expect: function_blocked
SELECT pg_advisory_lock(1)
-- case: advisory xact lock
-- expect: function_blocked
SELECT pg_advisory_xact_lock(1)
-- case: try advisory lock
-- expect: function_blocked
SELECT pg_try_advisory_lock(1)
-- case: nextval
-- expect: function_blocked
SELECT nextval('orders_id_seq')
-- case: setval
-- expect: function_blocked
SELECT setval('orders_id_seq', 1)
-- case: currval
-- expect: function_blocked
SELECT currval('orders_id_seq')
-- case: cancel backend
-- expect: function_blocked
SELECT pg_cancel_backend(123)
-- case: terminate backend
-- expect: function_blocked
SELECT pg_terminate_backend(pid) FROM generate_series(1, 10) AS pid
-- case: reload conf
-- expect: function_blocked
SELECT pg_reload_conf()
-- case: rotate logfile
-- expect: function_blocked
SELECT pg_rotate_logfile()
-- case: query_to_xml runs sql text
-- expect: function_blocked
SELECT query_to_xml('DELETE FROM orders RETURNING *', true, false, '')
-- case: query_to_xmlschema
-- expect: function_blocked
SELECT query_to_xmlschema('SELECT 1', true, false, '')
-- case: query_to_xml_and_xmlschema
-- expect: function_blocked
SELECT query_to_xml_and_xmlschema('SELECT 1', true, false, '')
-- case: cursor_to_xml
-- expect: function_blocked
SELECT cursor_to_xml('c', 1, true, false, '')
-- case: table_to_xml
-- expect: function_blocked
SELECT table_to_xml('pg_authid', true, false, '')
-- case: ts_stat runs sql text
-- expect: function_blocked
SELECT * FROM ts_stat('SELECT to_tsvector(secret) FROM vault')
-- case: pg_notify
-- expect: function_blocked
SELECT pg_notify('chan', 'x')
-- case: unknown function
-- expect: function_not_allowed
SELECT my_udf(1)
-- case: unknown function in another schema shadowing a builtin name
-- expect: function_not_allowed
SELECT public.lower('X')
-- case: version is not on the allowlist
-- expect: function_not_allowed
SELECT version()
-- case: unknown function in from
-- expect: function_not_allowed
SELECT * FROM evil_srf()
-- case: unknown function in case
-- expect: function_not_allowed
SELECT CASE WHEN true THEN side_effect() END
-- case: quoted upper-case builtin is not the builtin
-- expect: function_not_allowed
SELECT "LOWER"('x')
-- case: operator from another schema
-- expect: function_not_allowed
SELECT 1 OPERATOR(public.+) 2
-- case: unknown tablesample method
-- expect: function_not_allowed
SELECT * FROM orders TABLESAMPLE evil_method (10)
-- case: file access in lateral
-- expect: function_blocked
SELECT * FROM orders o CROSS JOIN LATERAL (SELECT pg_read_file('/etc/passwd') WHERE o.id = 1) f
-- case: file access as from-clause function
-- expect: function_blocked
SELECT * FROM pg_read_file('/etc/passwd') AS f(x)
-- case: dblink in cte
-- expect: function_blocked
WITH r AS (SELECT * FROM dblink('host=evil', 'SELECT 1') AS t(a int)) SELECT * FROM r
-- case: advisory lock in case branch
-- expect: function_blocked
SELECT CASE WHEN id = 1 THEN pg_advisory_lock(id) END FROM orders
-- case: sequence in subquery
-- expect: function_blocked
SELECT * FROM (SELECT nextval('s') AS n) x
-- case: sequence in scalar subquery in select list
-- expect: function_blocked
SELECT id, (SELECT setval('s', 1)) FROM orders
-- case: query_to_xml as from-clause function
-- expect: function_blocked
SELECT * FROM query_to_xml('DELETE FROM orders RETURNING 1', true, false, '') AS x
-- case: query_to_xml in case branch
-- expect: function_blocked
SELECT CASE WHEN false THEN query_to_xml('DROP TABLE x', true, false, '') END
-- case: set_config in lateral
-- expect: function_blocked
SELECT * FROM orders o, LATERAL (SELECT set_config('role', 'postgres', true)) s
-- case: set_config in cte
-- expect: function_blocked
WITH s AS (SELECT set_config('search_path', 'evil', false)) SELECT * FROM s
-- case: backend signal in subquery
-- expect: function_blocked
SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM generate_series(1, 5) pid) x
-- case: large object in cte
-- expect: function_blocked
WITH l AS (SELECT lo_import('/etc/passwd') AS oid) SELECT * FROM l
-- case: unknown function in lateral
-- expect: function_not_allowed
SELECT * FROM orders o CROSS JOIN LATERAL my_srf(o.id) f
-- case: unknown function hidden in a cte
-- expect: function_not_allowed
WITH x AS (SELECT evil() AS e) SELECT e FROM x
-- case: function in explain query
-- expect: function_blocked
EXPLAIN (FORMAT JSON) SELECT * FROM pg_ls_dir('.')
-- case: dollar-quoted argument keeps the call visible
-- expect: function_blocked
SELECT pg_read_file($$/etc/passwd$$)
-- case: function after a nested comment
-- expect: function_blocked
SELECT /* /* */ ) */ pg_sleep(1)
-- case: a function outside the allowlist called in column notation
-- expect: function_not_allowed
SELECT o.hash_record FROM orders o
-- case: record_send in column notation
-- expect: function_not_allowed
SELECT o.record_send FROM orders o
-- case: statistics writer in column notation
-- expect: function_not_allowed
SELECT o.pg_restore_relation_stats FROM orders o
-- case: the function behind pg_prepared_statements
-- expect: function_not_allowed
SELECT * FROM pg_prepared_statement()
-- case: the function behind pg_cursors
-- expect: function_not_allowed
SELECT * FROM pg_cursor()
-- case: the function behind pg_settings
-- expect: function_not_allowed
SELECT * FROM pg_show_all_settings()
-- case: the function behind pg_stat_activity
-- expect: function_not_allowed
SELECT * FROM pg_stat_get_activity(NULL)
-- case: statistics function
-- expect: function_not_allowed
SELECT pg_stat_get_live_tuples('customers'::regclass)
-- case: catalog reader for comments
-- expect: function_not_allowed
SELECT col_description('customers'::regclass, 4)
-- case: catalog reader for view definitions
-- expect: function_not_allowed
SELECT pg_get_viewdef('some_view')
-- case: privilege probe on a hidden column
-- expect: function_not_allowed
SELECT has_column_privilege('customers', 'email', 'SELECT')
