-- Ordinary client SQL that the second parser (sqlglot) once refused: Postgres's statement is what it reads.
-- case: comment after the final semicolon
SELECT count(*) FROM orders; -- done
-- case: block comment after the final semicolon
SELECT count(*) FROM orders; /* done */
-- case: comments before and after the semicolon
SELECT count(*) FROM orders -- all of them
; -- done
-- case: nested block comment after the semicolon holds only comment
SELECT count(*) FROM orders; /* a /* nested */ DROP TABLE orders; */
-- case: EXPLAIN with a trailing comment
EXPLAIN SELECT count(*) FROM orders; -- plan
-- case: numeric literals with digit groups and base prefixes (PostgreSQL 16)
SELECT 1_000_000, 0x1F
-- case: numeric literals with aliases
SELECT 1_000_000 AS n, 0x1F AS h, 0o17 AS o, 0b101 AS b, 0X_1f AS u, 1_0.2_5 AS f, 1_5e1_0 AS e
-- case: digit groups in a filter
SELECT order_id FROM orders WHERE total > 1_000 LIMIT 10
-- case: XMLTABLE over a constant document
SELECT x.* FROM XMLTABLE('/rows/row' PASSING ('<rows><row><a>1</a></row></rows>'::xml) COLUMNS a int PATH 'a') AS x
-- case: XMLTABLE with BY REF and an ordinality column
SELECT x.id, x.n FROM XMLTABLE('/r/row' PASSING BY REF ('<r><row id="1"/></r>'::xml) BY REF COLUMNS id int PATH '@id', n FOR ORDINALITY, a text PATH 'a' DEFAULT '-' NOT NULL) AS x
-- case: a column named ref after GROUP BY is not BY REF
SELECT ref, count(*) FROM (SELECT status AS ref FROM orders) s GROUP BY ref
-- case: substring FOR a column named ordinality
SELECT substring(s FROM 1 FOR ordinality) FROM (SELECT status AS s, 3 AS ordinality FROM orders) q
