-- case: hidden table
-- expect: hidden_table
-- policy: {"hidden_tables": ["salaries"]}
SELECT * FROM salaries
-- case: hidden table schema-qualified entry hides the bare name
-- expect: hidden_table
-- policy: {"hidden_tables": ["hr.salaries"]}
SELECT amount FROM salaries
-- case: hidden table qualified in query
-- expect: hidden_table
-- policy: {"hidden_tables": ["salaries"]}
SELECT amount FROM hr.salaries
-- case: hidden table quoted
-- expect: hidden_table
-- policy: {"hidden_tables": ["salaries"]}
SELECT amount FROM "salaries"
-- case: hidden table in subquery
-- expect: hidden_table
-- policy: {"hidden_tables": ["salaries"]}
SELECT (SELECT max(amount) FROM salaries)
-- case: hidden table in cte
-- expect: hidden_table
-- policy: {"hidden_tables": ["salaries"]}
WITH s AS (SELECT * FROM salaries) SELECT count(*) FROM s
-- case: hidden table in lateral
-- expect: hidden_table
-- policy: {"hidden_tables": ["salaries"]}
SELECT * FROM employees e CROSS JOIN LATERAL (SELECT amount FROM salaries s WHERE s.emp = e.id) x
-- case: hidden table via TABLE
-- expect: hidden_table
-- policy: {"hidden_tables": ["salaries"]}
TABLE salaries
-- case: hidden column named
-- expect: hidden_column
-- policy: {"hidden_columns": ["customers.ssn"]}
SELECT name, ssn FROM customers
-- case: hidden column qualified by alias
-- expect: hidden_column
-- policy: {"hidden_columns": ["customers.ssn"]}
SELECT c.ssn AS x FROM customers c
-- case: hidden column in where
-- expect: hidden_column
-- policy: {"hidden_columns": ["customers.ssn"]}
SELECT id FROM customers WHERE ssn LIKE '123%'
-- case: hidden column via star
-- expect: hidden_column
-- policy: {"hidden_columns": ["customers.ssn"]}
SELECT * FROM customers
-- case: hidden column via qualified star
-- expect: hidden_column
-- policy: {"hidden_columns": ["customers.ssn"]}
SELECT o.id, c.* FROM orders o JOIN customers c ON c.id = o.customer_id
-- case: hidden column via star in cte
-- expect: hidden_column
-- policy: {"hidden_columns": ["customers.ssn"]}
WITH x AS (SELECT * FROM customers) SELECT name FROM x
-- case: hidden column via whole-row reference
-- expect: hidden_column
-- policy: {"hidden_columns": ["customers.ssn"]}
SELECT to_jsonb(c) FROM customers c
-- case: hidden column via row_to_json of table name
-- expect: hidden_column
-- policy: {"hidden_columns": ["customers.ssn"]}
SELECT row_to_json(customers) FROM customers
-- case: hidden column via TABLE
-- expect: hidden_column
-- policy: {"hidden_columns": ["customers.ssn"]}
TABLE customers
-- case: hidden column via using
-- expect: hidden_column
-- policy: {"hidden_columns": ["customers.ssn"]}
SELECT count(*) FROM customers JOIN leaked USING (ssn)
-- case: hidden column via natural join
-- expect: hidden_column
-- policy: {"hidden_columns": ["customers.ssn"]}
SELECT count(*) FROM customers NATURAL JOIN leaked
-- case: hidden column in scalar subquery
-- expect: hidden_column
-- policy: {"hidden_columns": ["customers.ssn"]}
SELECT (SELECT max(c.ssn) FROM customers c) AS m
-- case: hidden column in case
-- expect: hidden_column
-- policy: {"hidden_columns": ["customers.ssn"]}
SELECT CASE WHEN ssn IS NULL THEN 0 ELSE 1 END FROM customers
-- case: hidden column in lateral
-- expect: hidden_column
-- policy: {"hidden_columns": ["customers.ssn"]}
SELECT o.id, x.s FROM orders o CROSS JOIN LATERAL (SELECT c.ssn AS s FROM customers c WHERE c.id = o.customer_id) x
-- case: hidden column via star in from-clause subquery
-- expect: hidden_column
-- policy: {"hidden_columns": ["customers.ssn"]}
SELECT s.name FROM (SELECT * FROM customers) s
-- case: hidden column via composite field selection
-- expect: hidden_column
-- policy: {"hidden_columns": ["customers.ssn"]}
SELECT (c).ssn FROM customers c
-- case: hidden column quoted
-- expect: hidden_column
-- policy: {"hidden_columns": ["customers.ssn"]}
SELECT "ssn" FROM customers
