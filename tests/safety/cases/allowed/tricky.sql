-- case: string literal containing DROP
SELECT 'DROP TABLE orders; DELETE FROM x' AS s
-- case: identifier containing delete
SELECT "delete", "DROP TABLE x" FROM "update"
-- case: column named like a keyword
SELECT o."select", o."insert" FROM orders o
-- case: comment containing statements
SELECT 1 /* ; DROP TABLE x; */ AS one -- ; DELETE FROM orders
-- case: nested comment containing statements
SELECT 1 /* outer /* ; DROP TABLE x; */ ; DELETE FROM y; */ AS one
-- case: dollar quoted string containing statements
SELECT $$; DROP TABLE x; $$ AS s
-- case: tagged dollar quote containing a plain dollar quote
SELECT $tag$ $$; DELETE FROM x; $$ $tag$ AS s
-- case: escape string with escaped quote keeps one statement
SELECT E'it\'s; DROP TABLE x; --' AS s
-- case: doubled quotes
SELECT 'it''s; DROP TABLE x' AS s
-- case: unicode escaped identifier
SELECT U&"d\0061t\+000061" FROM t
-- case: function names inside strings
SELECT 'pg_sleep(10)', 'set_config' AS s
-- case: quoted pg_catalog lower
SELECT "lower"(name) FROM customers
-- case: non-ascii text before a function keeps positions sane
SELECT 'Zürich — café' AS city, lower('ÄÖÜ')
-- case: trailing semicolon is one statement
SELECT 1;
-- case: leading and trailing comments
-- a comment
SELECT 1 -- trailing
