-- case: repeat with a count capped by LEAST
SELECT repeat('x', LEAST((SELECT count(*)::int FROM order_items), 1000))
-- case: lpad with a length capped by LEAST and clamped by GREATEST
SELECT lpad('', GREATEST(0, LEAST((SELECT max(order_id) FROM orders), 5000)), 'ab')
-- case: array_fill with a capped dimension
SELECT cardinality(array_fill(1, ARRAY[LEAST((SELECT count(*)::int FROM order_items), 2000)]))
-- case: a bar chart from a count per group
SELECT status, repeat('#', (count(*) / 100)::int) FROM orders GROUP BY status
-- case: replace and regexp_replace of stored values
SELECT replace(first_name, 'a', 'aa'), regexp_replace(last_name, '\s+', ' ', 'g') FROM customers
-- case: the largest repeat the analysis allows
SELECT length(repeat('x', 100000))
-- case: string_agg of names over a table
SELECT string_agg(first_name || ' ' || last_name, ', ' ORDER BY last_name) FROM customers
-- case: json_agg of objects over a table
SELECT json_agg(json_build_object('id', order_id, 'status', status, 'total', total_amount)) FROM orders WHERE customer_id = 7
-- case: array_agg over a small series
SELECT array_agg(g) FROM generate_series(1, 1000) g
-- case: cross join of two small unnests
SELECT a, b FROM unnest(ARRAY[1, 2, 3]) a, unnest(ARRAY['x', 'y']) b
-- case: unnest over a column expands each row
SELECT o.order_id, t FROM orders o CROSS JOIN LATERAL unnest(ARRAY[o.status, o.channel]) t
-- case: string_to_table over a constant
SELECT t FROM string_to_table('a,b,c', ',') t
-- case: small factorial and power
SELECT factorial(20), 2 ^ 10, power(1.05, 30), 9.9::numeric ^ 100
-- case: modulo on numbers, also through OPERATOR(pg_catalog.%)
SELECT order_id % 2, order_id OPERATOR(pg_catalog.%) 3 FROM orders WHERE order_id % 10 = 0
-- case: qualified core operators
SELECT 1 OPERATOR(pg_catalog.+) 2, 'a' OPERATOR(pg_catalog.||) 'b'
-- case: an extension operator the DBA allowed
-- policy: {"extra_functions": ["public.%"]}
SELECT 'abc' OPERATOR(public.%) 'abd'
-- case: counted recursion
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) SELECT sum(i) FROM n
-- case: counted recursion going down, stop written the other way round
WITH RECURSIVE n(i) AS (SELECT 100 UNION ALL SELECT i - 2 FROM n WHERE 0 < i) SELECT count(*) FROM n
-- case: counted recursion building a string by a constant each step
WITH RECURSIVE r(n, v) AS (SELECT 1, ''::text UNION ALL SELECT n + 1, v || 'ab' FROM r WHERE n < 100) SELECT max(length(v)) FROM r
-- case: hierarchy walk with a depth column
WITH RECURSIVE chain AS (SELECT employee_id, 1 AS depth FROM employees WHERE manager_id IS NULL UNION ALL SELECT e.employee_id, c.depth + 1 FROM employees e JOIN chain c ON e.manager_id = c.employee_id) SELECT depth, count(*) FROM chain GROUP BY depth
-- case: hierarchy walk over a filtered derived table of one table (the row-filter rewrite's form)
WITH RECURSIVE chain AS (SELECT employee_id, 1 AS depth FROM employees WHERE manager_id IS NULL UNION ALL SELECT e.employee_id, c.depth + 1 FROM (SELECT * FROM employees AS nl2sql_rf WHERE (nl2sql_rf.region_id = $1) OFFSET 0) e JOIN chain c ON e.manager_id = c.employee_id) SELECT depth, count(*) FROM chain GROUP BY depth
-- case: hierarchy walk over a derived table picking columns of one table
WITH RECURSIVE chain AS (SELECT employee_id, 1 AS depth FROM employees WHERE manager_id IS NULL UNION ALL SELECT e.employee_id, c.depth + 1 FROM (SELECT employee_id, manager_id FROM employees WHERE hire_date > '2020-01-01') AS e JOIN chain c ON e.manager_id = c.employee_id) SELECT depth, count(*) FROM chain GROUP BY depth
-- case: recursion stopped by a plain LIMIT
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n LIMIT 10
-- case: text search with @@ on a column query
SELECT count(*) FROM products WHERE to_tsvector(name) @@ to_tsquery('simple', 'lamp') && plainto_tsquery(name)
-- case: constant jsonpath with a harmless like_regex behind a cast
SELECT count(*) FROM events WHERE payload @? '$.page ? (@ like_regex "^/p")'::jsonpath
-- case: a walk over a table's filtered rows (the shape the rules' row filters give a filtered table)
WITH RECURSIVE chain(order_id, depth) AS (SELECT order_id, 1 FROM (SELECT * FROM orders AS f WHERE f.status <> 'x') AS o WHERE o.sales_rep_id IS NULL UNION ALL SELECT o.order_id, c.depth + 1 FROM (SELECT * FROM orders AS f WHERE f.status <> 'x') AS o JOIN chain c ON o.customer_id = c.order_id) SELECT count(*) FROM chain
