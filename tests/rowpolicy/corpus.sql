-- Statements run for tenant 1 in both row-policy modes (tests/rowpolicy/test_corpus.py).
-- Format as tests/safety/cases: `-- case: NAME`, optional `-- expect: CODE` (default: allowed), then the SQL.
-- An allowed case must return the same rows in both modes, and no value of tenant 2 (TENANT2, ids >= 1000,
-- amounts >= 9000, qty >= 9000) anywhere. A refused case must be refused in the gateway-filter mode with
-- the code given.

-- case: plain table
SELECT customer_id, tenant_id, name, region FROM customers
-- case: count
SELECT count(*) FROM orders
-- case: sum
SELECT sum(amount) FROM orders
-- case: avg max min
SELECT avg(amount), max(amount), min(amount), count(DISTINCT customer_id) FROM orders
-- case: group by
SELECT status, count(*), sum(amount) FROM orders GROUP BY status
-- case: group by having
SELECT customer_id, sum(amount) FROM orders GROUP BY customer_id HAVING sum(amount) > 0
-- case: where
SELECT order_id FROM orders WHERE amount > 50
-- case: where on tenant 2 id
SELECT order_id, amount FROM orders WHERE order_id = 1010
-- case: where on tenant id
SELECT order_id FROM orders WHERE tenant_id = 2
-- case: where or
SELECT order_id FROM orders WHERE status = 'open' OR tenant_id = 2 OR true
-- case: distinct
SELECT DISTINCT status FROM orders
-- case: order limit
SELECT order_id, amount FROM orders ORDER BY amount DESC LIMIT 2
-- case: offset
SELECT order_id FROM orders ORDER BY order_id OFFSET 1
-- case: inner join
SELECT c.name, o.amount FROM customers c JOIN orders o ON o.customer_id = c.customer_id
-- case: join using
SELECT name, amount FROM customers JOIN orders USING (customer_id)
-- case: natural join items
SELECT order_id, qty FROM orders NATURAL JOIN order_items
-- case: three-way join
SELECT c.name, p.name, i.qty FROM customers c JOIN orders o ON o.customer_id = c.customer_id
  JOIN order_items i ON i.order_id = o.order_id JOIN products p ON p.product_id = i.product_id
-- case: join unfiltered table
SELECT p.name, i.qty FROM order_items i JOIN products p ON p.product_id = i.product_id
-- case: products only
SELECT product_id, name, price FROM products
-- case: left join
SELECT c.name, o.order_id FROM customers c LEFT JOIN orders o ON o.customer_id = c.customer_id
-- case: left join keeps unmatched
SELECT c.customer_id, count(o.order_id) FROM customers c LEFT JOIN orders o ON o.customer_id = c.customer_id
  GROUP BY c.customer_id
-- case: right join
SELECT c.name, o.order_id FROM customers c RIGHT JOIN orders o ON o.customer_id = c.customer_id
-- case: full join
SELECT c.customer_id, o.order_id FROM customers c FULL JOIN orders o ON o.customer_id = c.customer_id
-- case: full join with filter in on
SELECT c.customer_id, o.order_id FROM customers c FULL OUTER JOIN orders o
  ON o.customer_id = c.customer_id AND o.amount > 80
-- case: left join items to orders of another tenant id
SELECT i.item_id, o.order_id FROM order_items i LEFT JOIN orders o ON o.order_id = i.order_id
-- case: self join
SELECT a.order_id, b.order_id FROM orders a JOIN orders b ON b.parent_order = a.order_id
-- case: self left join
SELECT a.order_id, b.order_id AS child FROM orders a LEFT JOIN orders b ON b.parent_order = a.order_id
-- case: cross join lateral
SELECT c.name, x.n FROM customers c CROSS JOIN LATERAL (SELECT count(*) AS n FROM orders o
  WHERE o.customer_id = c.customer_id) x
-- case: lateral comma
SELECT c.customer_id, l.amount FROM customers c, LATERAL (SELECT amount FROM orders o
  WHERE o.customer_id = c.customer_id ORDER BY amount DESC LIMIT 1) l
-- case: left join lateral
SELECT c.customer_id, l.amount FROM customers c LEFT JOIN LATERAL (SELECT amount FROM orders o
  WHERE o.customer_id = c.customer_id LIMIT 1) l ON true
-- case: subquery in from
SELECT s.status, s.n FROM (SELECT status, count(*) AS n FROM orders GROUP BY status) s
-- case: subquery in from aliased columns
SELECT s.a FROM (SELECT order_id AS a FROM orders) AS s
-- case: in subquery
SELECT name FROM customers WHERE customer_id IN (SELECT customer_id FROM orders)
-- case: not in subquery
SELECT name FROM customers WHERE customer_id NOT IN (SELECT customer_id FROM orders WHERE customer_id IS NOT NULL)
-- case: in subquery on ids of tenant 2
SELECT order_id FROM order_items WHERE order_id IN (SELECT order_id FROM orders WHERE tenant_id = 2)
-- case: exists
SELECT c.name FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.customer_id)
-- case: not exists
SELECT c.name FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.customer_id)
-- case: exists uncorrelated
SELECT count(*) FROM products WHERE EXISTS (SELECT 1 FROM orders WHERE amount > 9000)
-- case: scalar subquery in select
SELECT c.name, (SELECT sum(amount) FROM orders o WHERE o.customer_id = c.customer_id) FROM customers c
-- case: scalar subquery uncorrelated
SELECT (SELECT max(amount) FROM orders) AS top, (SELECT count(*) FROM customers) AS n
-- case: scalar subquery in where
SELECT order_id FROM orders WHERE amount = (SELECT max(amount) FROM orders)
-- case: correlated subquery in where
SELECT o.order_id FROM orders o WHERE o.amount > (SELECT avg(amount) FROM orders x WHERE x.status = o.status)
-- case: any subquery
SELECT order_id FROM orders WHERE amount > ANY (SELECT amount FROM orders WHERE status = 'shipped')
-- case: all subquery
SELECT order_id FROM orders WHERE amount >= ALL (SELECT amount FROM orders)
-- case: cte
WITH t AS (SELECT customer_id, sum(amount) AS total FROM orders GROUP BY customer_id)
SELECT c.name, t.total FROM customers c JOIN t USING (customer_id)
-- case: cte twice
WITH o AS (SELECT order_id, amount FROM orders) SELECT a.order_id FROM o a JOIN o b ON a.amount < b.amount
-- case: chained ctes
WITH a AS (SELECT order_id, customer_id FROM orders), b AS (SELECT customer_id, count(*) AS n FROM a GROUP BY 1)
SELECT * FROM b
-- case: cte shadowing a table
WITH orders AS (SELECT order_id, amount FROM orders WHERE amount > 50) SELECT * FROM orders
-- case: cte shadowing with the real table later in scope
WITH customers AS (SELECT customer_id FROM orders) SELECT count(*) FROM customers
-- case: cte named like a table read in a subquery of the main query
WITH orders AS (SELECT 1 AS order_id) SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM order_items)
-- case: nested cte shadowing
WITH x AS (SELECT order_id FROM orders)
SELECT (WITH orders AS (SELECT order_id FROM x) SELECT count(*) FROM orders), (SELECT count(*) FROM orders)
-- case: cte body reads the table it shadows later
WITH a AS (SELECT order_id FROM orders), orders AS (SELECT order_id FROM a) SELECT * FROM orders
-- case: cte not visible in earlier sibling
WITH a AS (SELECT count(*) AS n FROM customers), customers AS (SELECT 1 AS customer_id) SELECT * FROM a
-- case: recursive cte
WITH RECURSIVE chain(order_id, depth) AS (
  SELECT order_id, 1 FROM orders WHERE parent_order IS NULL
  UNION ALL
  SELECT o.order_id, c.depth + 1 FROM orders o JOIN chain c ON o.parent_order = c.order_id WHERE c.depth < 5)
SELECT * FROM chain
-- case: recursive cte named like the table
WITH RECURSIVE orders(order_id, depth) AS (
  SELECT 1, 1 UNION ALL SELECT order_id + 1, depth + 1 FROM orders WHERE depth < 3)
SELECT * FROM orders
-- case: recursive counter joined with orders
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3)
SELECT n.i, count(o.order_id) FROM n LEFT JOIN orders o ON o.customer_id = n.i GROUP BY n.i
-- case: union
SELECT name FROM customers UNION SELECT status FROM orders
-- case: union all
SELECT customer_id FROM customers UNION ALL SELECT customer_id FROM orders
-- case: intersect
SELECT customer_id FROM customers INTERSECT SELECT customer_id FROM orders
-- case: except
SELECT customer_id FROM customers EXCEPT SELECT customer_id FROM orders
-- case: except all
SELECT customer_id FROM orders EXCEPT ALL SELECT customer_id FROM customers
-- case: union in subquery
SELECT count(*) FROM (SELECT order_id FROM orders UNION SELECT item_id FROM order_items) u
-- case: set operation with cte in one arm
(WITH orders AS (SELECT 7 AS order_id) SELECT order_id FROM orders) UNION SELECT order_id FROM orders
-- case: window row_number
SELECT order_id, row_number() OVER (ORDER BY amount) FROM orders
-- case: window partition
SELECT order_id, sum(amount) OVER (PARTITION BY customer_id) FROM orders
-- case: window rank over join
SELECT c.name, rank() OVER (ORDER BY o.amount DESC) FROM customers c JOIN orders o USING (customer_id)
-- case: window count all
SELECT order_id, count(*) OVER () FROM orders
-- case: window lag
SELECT order_id, lag(amount) OVER (ORDER BY order_id) FROM orders
-- case: whole-row reference
SELECT o FROM orders o
-- case: whole-row reference unaliased
SELECT orders FROM orders
-- case: to_jsonb of a row
SELECT to_jsonb(o) FROM orders o
-- case: row_to_json of an alias
SELECT row_to_json(i) FROM order_items i
-- case: star of an alias
SELECT o.* FROM orders o
-- case: star of a table
SELECT orders.* FROM orders
-- case: star
SELECT * FROM orders
-- case: star of a join
SELECT * FROM orders JOIN order_items USING (order_id)
-- case: json agg of rows
SELECT json_agg(o) FROM orders o
-- case: table statement
TABLE orders
-- case: table statement in union
TABLE order_items UNION ALL TABLE order_items
-- case: table statement in subquery
SELECT count(*) FROM (TABLE orders) t
-- case: only
SELECT event_id, label FROM ONLY events
-- case: inheritance
SELECT event_id, label FROM events
-- case: inheritance star
SELECT event_id FROM events *
-- case: only in a join
SELECT e.label, c.name FROM ONLY events e JOIN customers c ON c.customer_id = e.event_id
-- case: child table
SELECT event_id, label, archived FROM events_archive
-- case: schema-qualified
SELECT order_id, amount FROM public.orders
-- case: schema-qualified alias
SELECT o.order_id FROM public.orders AS o
-- case: other schema
SELECT invoice_id, total, memo FROM sales.invoices
-- case: other schema join
SELECT i.invoice_id, o.status FROM sales.invoices i JOIN orders o USING (order_id)
-- case: quoted mixed case
SELECT note_id, "Body" FROM "Notes"
-- case: quoted lower case
SELECT "order_id" FROM "orders"
-- case: quoted schema
SELECT o.order_id FROM "public"."orders" o
-- case: upper case unquoted
SELECT ORDER_ID FROM ORDERS
-- case: column alias list
SELECT a, b FROM orders AS o(a, b)
-- case: column alias list join
SELECT x.a, y.q FROM orders x(a) JOIN order_items y(i, t, a, p, q) USING (a)
-- case: comments around the name
SELECT count(*) FROM public /* here */ . /* there */ orders
-- case: case expression
SELECT order_id, CASE WHEN amount > 100 THEN 'big' ELSE 'small' END FROM orders
-- case: coalesce nullif
SELECT coalesce(region, 'none'), nullif(name, 'bob') FROM customers
-- case: string functions
SELECT upper(name), length(name), left(name, 2) FROM customers
-- case: string_agg
SELECT string_agg(name, ',' ORDER BY name) FROM customers
-- case: array_agg
SELECT array_agg(order_id ORDER BY order_id) FROM orders
-- case: date functions
SELECT date_trunc('month', ordered_on), count(*) FROM orders GROUP BY 1
-- case: extract
SELECT extract(year FROM ordered_on) AS y, sum(amount) FROM orders GROUP BY y
-- case: filter clause
SELECT count(*) FILTER (WHERE status = 'open'), count(*) FILTER (WHERE amount > 9000) FROM orders
-- case: grouping sets
SELECT status, customer_id, count(*) FROM orders GROUP BY GROUPING SETS ((status), (customer_id), ())
-- case: rollup
SELECT status, sum(amount) FROM orders GROUP BY ROLLUP (status)
-- case: values join
SELECT o.order_id FROM (VALUES (10), (1010)) v(x) LEFT JOIN orders o ON o.order_id = v.x
-- case: values only
VALUES (1, 'a'), (2, 'b')
-- case: generate_series join
SELECT g, count(o.order_id) FROM generate_series(1, 3) g LEFT JOIN orders o ON o.customer_id = g GROUP BY g
-- case: unnest
SELECT u FROM unnest(ARRAY[10, 1010]) u WHERE u IN (SELECT order_id FROM orders)
-- case: in list of tenant 2 ids
SELECT name FROM customers WHERE customer_id IN (1001, 1002, 1)
-- case: like
SELECT name FROM customers WHERE name LIKE '%TENANT2%' OR name LIKE 'a%'
-- case: between
SELECT order_id FROM orders WHERE amount BETWEEN 0 AND 100000
-- case: distinct on
SELECT DISTINCT ON (customer_id) customer_id, order_id FROM orders ORDER BY customer_id, amount DESC
-- case: nested subqueries
SELECT count(*) FROM (SELECT * FROM (SELECT order_id, amount FROM orders WHERE amount > 0) a) b
-- case: subquery joins subquery
SELECT a.customer_id FROM (SELECT customer_id FROM customers) a JOIN (SELECT customer_id FROM orders) b
  USING (customer_id)
-- case: exists in select list
SELECT c.customer_id, EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.customer_id) FROM customers c
-- case: array subquery
SELECT ARRAY(SELECT order_id FROM orders ORDER BY 1)
-- case: items of an order of the other tenant
SELECT count(*) FROM order_items WHERE order_id = 10
-- case: join to a customer id shared across tenants
SELECT o.order_id, c.name FROM orders o JOIN customers c ON c.customer_id = o.customer_id WHERE o.order_id >= 1000
-- case: percentile
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) FROM orders
-- case: bool aggregates
SELECT bool_and(amount > 0), bool_or(amount > 9000) FROM orders
-- case: cast row to text
SELECT o::text FROM orders o
-- case: field of a whole row
SELECT (o).amount FROM orders o
-- case: row comparison
SELECT order_id FROM orders o WHERE (o.customer_id, o.status) IN (SELECT customer_id, 'shipped' FROM customers)
-- case: lateral over items
SELECT o.order_id, t.total FROM orders o, LATERAL (SELECT sum(qty) AS total FROM order_items i
  WHERE i.order_id = o.order_id) t
-- case: limit in subquery
SELECT * FROM (SELECT order_id FROM orders ORDER BY amount DESC LIMIT 1) top
-- case: explain, even of a statement without filtered tables (a caller under a row policy sees no estimates)
-- expect: row_filter_unenforceable
EXPLAIN SELECT name FROM products
-- case: view over filtered tables
-- expect: row_filter_unenforceable
SELECT name, amount FROM customer_orders
-- case: view over an unfiltered table
-- expect: row_filter_unenforceable
SELECT name FROM product_list
-- case: materialized view
-- expect: row_filter_unenforceable
SELECT total FROM order_totals
-- case: catalog the safety check allows
-- expect: row_filter_unenforceable
SELECT count(*) FROM pg_am
-- case: tablesample
-- expect: row_filter_unenforceable
SELECT count(*) FROM orders TABLESAMPLE SYSTEM (100)
-- case: explain over a filtered table
-- expect: row_filter_unenforceable
EXPLAIN SELECT * FROM orders WHERE status = 'open'
-- case: bind parameter
-- expect: row_filter_unenforceable
SELECT order_id FROM orders WHERE order_id = $1
-- case: view in a subquery
-- expect: row_filter_unenforceable
SELECT count(*) FROM products WHERE EXISTS (SELECT 1 FROM customer_orders)
-- case: view in a cte
-- expect: row_filter_unenforceable
WITH v AS (SELECT amount FROM customer_orders) SELECT sum(amount) FROM v
-- case: view in a lateral
-- expect: row_filter_unenforceable
SELECT p.name FROM products p, LATERAL (SELECT name FROM product_list l WHERE l.product_id = p.product_id) x
-- case: schema-qualified view
-- expect: row_filter_unenforceable
SELECT count(*) FROM public.customer_orders
-- case: unknown table
-- expect: row_filter_unenforceable
SELECT 1 FROM nothing_here
