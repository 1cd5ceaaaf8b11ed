-- policy-default: {"hidden_columns": ["customers.email", "employees.salary", "employees.email"]}
-- case: visible columns of a table with hidden ones
SELECT first_name, last_name FROM employees
-- case: count star
SELECT count(*) FROM customers
-- case: join using with a column the table lacks
SELECT c.name, r.name FROM customers c JOIN regions r USING (region_id)
-- case: join using
SELECT c.first_name, r.name FROM customers c JOIN regions r USING (region_id)
-- case: column alias list on a table without hidden columns
SELECT r.a, r.b FROM regions AS r(a, b)
-- case: column alias list on a derived table
SELECT e.f FROM (SELECT first_name, last_name FROM employees) AS e(f, l)
-- case: column alias list on a cte
WITH s AS (SELECT first_name, city FROM customers) SELECT x.n FROM s AS x(n, c)
-- case: join alias column
SELECT j.first_name FROM (customers c JOIN regions r ON r.region_id = c.region_id) AS j
-- case: join alias star over tables without hidden columns
SELECT j.* FROM (orders o JOIN order_items oi USING (order_id)) AS j LIMIT 5
-- case: join alias whole row over tables without hidden columns
SELECT to_jsonb(j) FROM (orders o JOIN payments p USING (order_id)) AS j LIMIT 5
-- case: join alias with a column list over derived tables
SELECT j.b FROM ((SELECT customer_id, first_name FROM customers) c JOIN (SELECT customer_id AS cid FROM orders) o ON o.cid = c.customer_id) AS j(a, b, x)
-- case: whole row of a derived table
SELECT to_jsonb(s) FROM (SELECT first_name, city FROM customers) s
-- case: bare whole row of a derived table
SELECT s FROM (SELECT first_name, last_name FROM employees) s
-- case: whole row of a table without hidden columns
SELECT to_jsonb(r) FROM regions r
-- case: bare whole row of a table without hidden columns
SELECT r FROM regions r
-- case: TABLE of a table without hidden columns
TABLE regions
-- case: star over a table without hidden columns
SELECT * FROM orders LIMIT 10
-- case: star over a cte of visible columns
WITH c AS (SELECT customer_id, first_name, segment FROM customers) SELECT * FROM c
-- case: star over a subquery of visible columns
SELECT * FROM (SELECT employee_id, first_name, department FROM employees) e
-- case: composite field of a table without hidden columns
SELECT (r).name FROM regions r
-- case: composite field of a derived whole row
SELECT (s.r).name FROM (SELECT r FROM regions r) s
-- case: composite field selection of a visible column
SELECT (c).first_name FROM customers c
-- case: functional notation over a table without hidden columns
SELECT r.to_jsonb FROM regions r
-- case: cte of visible columns
WITH c AS (SELECT customer_id, first_name, segment FROM customers) SELECT segment, count(*) FROM c GROUP BY segment
-- case: cte named like the base table, selecting visible columns
WITH customers AS (SELECT customer_id, first_name FROM customers) SELECT * FROM customers
-- case: derived column named like a hidden column
SELECT x.email FROM (SELECT 'support@example.com' AS email) x
-- case: cte column named like a hidden column
WITH contact AS (SELECT 'support@example.com' AS email) SELECT email FROM contact
-- case: output alias named like nothing hidden
SELECT c.first_name AS name FROM customers c ORDER BY name
-- case: using on visible columns
SELECT count(*) FROM customers c JOIN orders o USING (customer_id)
-- case: natural join of derived tables with visible columns
SELECT count(*) FROM (SELECT customer_id FROM orders) o NATURAL JOIN (SELECT customer_id, segment FROM customers) c
-- case: natural join of a table with a derived table of known columns
SELECT count(*) FROM customers NATURAL JOIN (SELECT 1 AS region_id) r
-- case: lateral subquery over visible outer columns
SELECT c.first_name, x.n FROM customers c CROSS JOIN LATERAL (SELECT count(*) AS n FROM orders o WHERE o.customer_id = c.customer_id) x
-- case: lateral function over visible outer columns
SELECT c.customer_id, t.v FROM customers c CROSS JOIN LATERAL unnest(ARRAY[c.first_name, c.last_name]) AS t(v)
-- case: lateral set-returning function over json
SELECT e.event_id, kv.key FROM events e CROSS JOIN LATERAL jsonb_each(e.payload) AS kv
-- case: exists with a correlated visible column
SELECT count(*) FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.customer_id)
-- case: in subquery on visible columns
SELECT first_name FROM employees WHERE employee_id IN (SELECT sales_rep_id FROM orders WHERE channel = 'phone')
-- case: case on visible columns
SELECT CASE WHEN e.department = 'Sales' THEN 1 ELSE 0 END AS is_sales FROM employees e
-- case: casts of visible columns
SELECT hire_date::text, CAST(employee_id AS text) FROM employees
-- case: order by visible
SELECT first_name FROM employees ORDER BY hire_date DESC LIMIT 1
-- case: distinct on visible
SELECT DISTINCT ON (department) department, first_name FROM employees ORDER BY department, hire_date
-- case: filter on visible
SELECT count(*) FILTER (WHERE department = 'Sales') AS sales FROM employees
-- case: grouping sets on visible
SELECT department, region_id, count(*) FROM employees GROUP BY GROUPING SETS ((department), (region_id))
-- case: window on visible
SELECT first_name, rank() OVER (PARTITION BY department ORDER BY hire_date) FROM employees
-- case: named window on visible
SELECT count(*) OVER w FROM customers WINDOW w AS (PARTITION BY segment)
-- case: row and array constructors on visible (ROW(...) itself is read by sqlglot as a call)
SELECT (c.first_name, c.city), ARRAY[first_name, last_name] FROM customers c
-- case: union of visible columns
SELECT first_name FROM customers UNION SELECT first_name FROM employees
-- case: correlated scalar subquery
SELECT r.name, (SELECT count(*) FROM employees e WHERE e.region_id = r.region_id) AS staff FROM regions r
-- case: self join of employees
SELECT e.first_name, m.first_name AS manager FROM employees e LEFT JOIN employees m ON m.employee_id = e.manager_id
-- case: schema-qualified table
SELECT c.first_name FROM public.customers c
-- case: quoted names
SELECT "first_name" FROM "public"."customers"
-- case: json builder on visible
SELECT json_build_object('name', first_name, 'city', city) FROM customers
-- case: json_populate_record of a literal
SELECT (json_populate_record(NULL::customers, '{"first_name": "Ana"}')).first_name
-- case: tablesample on visible
SELECT first_name FROM customers TABLESAMPLE SYSTEM (10)
-- case: values joined on visible
SELECT v.x, c.first_name FROM (VALUES ('Enterprise')) AS v(x) JOIN customers c ON c.segment = v.x
-- case: star in exists over a table without hidden columns
SELECT c.first_name FROM customers c WHERE EXISTS (SELECT * FROM orders o WHERE o.customer_id = c.customer_id)
-- case: star in exists over a table with hidden columns
-- EXISTS only asks whether a row comes back: the select list of a plain SELECT under it is never evaluated,
-- so a star there reads nothing, even over a table with hidden columns (its WHERE is still checked).
SELECT 1 WHERE EXISTS (SELECT * FROM employees)
-- case: star in a correlated exists over a table with hidden columns
SELECT o.order_id FROM orders o WHERE EXISTS (SELECT * FROM customers c WHERE c.customer_id = o.customer_id)
-- case: qualified star in not exists over a table with hidden columns
SELECT o.order_id FROM orders o WHERE NOT EXISTS (SELECT c.* FROM customers c WHERE c.customer_id = o.customer_id)
-- case: star over a join in exists
SELECT r.name FROM regions r WHERE EXISTS (SELECT * FROM customers c JOIN employees e ON e.region_id = c.region_id WHERE c.region_id = r.region_id)
-- case: exists with a star in the select list
SELECT EXISTS (SELECT e.* FROM employees e WHERE e.department = 'Sales') AS has_sales
-- case: recursive org chart on visible columns
WITH RECURSIVE chain AS (SELECT employee_id, manager_id, first_name, 1 AS depth FROM employees WHERE manager_id IS NULL UNION ALL SELECT e.employee_id, e.manager_id, e.first_name, c.depth + 1 FROM employees e JOIN chain c ON e.manager_id = c.employee_id) SELECT depth, count(*) FROM chain GROUP BY depth
-- case: four-way join
SELECT r.name AS region, p.brand, sum(oi.quantity * oi.unit_price) AS revenue FROM order_items oi JOIN orders o ON o.order_id = oi.order_id JOIN products p ON p.product_id = oi.product_id JOIN customers c ON c.customer_id = o.customer_id JOIN regions r ON r.region_id = c.region_id WHERE o.status <> 'cancelled' GROUP BY r.name, p.brand ORDER BY revenue DESC
-- case: order by an output alias named like the table
SELECT segment, count(*) AS customers FROM customers GROUP BY segment ORDER BY customers DESC
-- case: order by an output alias named like a hidden column
SELECT first_name AS email FROM customers ORDER BY email
-- case: group by an output alias named like the table
SELECT segment AS customers, count(*) FROM customers GROUP BY customers
-- case: distinct on an output alias
SELECT DISTINCT ON (f) first_name AS f, last_name FROM customers ORDER BY f
-- case: order by an output alias of a union
SELECT first_name AS f FROM customers UNION SELECT first_name FROM employees ORDER BY f
-- case: an allowlisted function in column notation on a table without hidden columns
SELECT o.to_jsonb FROM orders o LIMIT 1
-- case: a derived table aliased like a table with hidden columns
SELECT customers.email FROM (SELECT 'support@example.com' AS email) AS customers
-- case: order by an output alias inside a scalar subquery
SELECT (SELECT 1 AS email ORDER BY email) AS one, first_name FROM customers
-- case: lateral values over visible columns
SELECT v.x FROM customers c, LATERAL (VALUES (c.first_name), (c.last_name)) AS v(x)
-- case: aggregate ordered by a visible column
SELECT string_agg(first_name, ',' ORDER BY hire_date) FROM employees
