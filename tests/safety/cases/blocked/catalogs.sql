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
