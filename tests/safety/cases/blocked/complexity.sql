-- case: comma cartesian
-- expect: cartesian_product
SELECT * FROM orders, customers
-- case: cross join
-- expect: cartesian_product
SELECT o.id, c.id FROM orders o CROSS JOIN customers c
-- case: join on true
-- expect: cartesian_product
SELECT o.id FROM orders o JOIN customers c ON true
-- case: where does not link the tables
-- expect: cartesian_product
SELECT o.id FROM orders o, customers c WHERE o.amount > 10 AND c.region = 'EU'
-- case: cartesian in subquery
-- expect: cartesian_product
SELECT count(*) FROM (SELECT 1 FROM orders a, orders b) s
-- case: three tables two linked
-- expect: cartesian_product
SELECT 1 FROM a JOIN b ON a.id = b.a_id, c
-- case: too many joins
-- expect: too_many_joins
-- policy: {"max_joins": 2}
SELECT 1 FROM a JOIN b ON a.id = b.id JOIN c ON c.id = b.id JOIN d ON d.id = c.id
-- case: subquery too deep
-- expect: subquery_too_deep
-- policy: {"max_subquery_depth": 2}
SELECT * FROM (SELECT * FROM (SELECT * FROM (SELECT 1 AS x) a) b) c
-- case: too complex
-- expect: too_complex
-- policy: {"max_ast_nodes": 20}
SELECT a + b + c + d + e + f + g + h + i + j + k FROM t WHERE x = 1 AND y = 2 AND z = 3
-- case: unbounded recursion
-- expect: unbounded_recursion
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n
-- case: unbounded recursion hidden in a subquery
-- expect: unbounded_recursion
SELECT * FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n) s
-- case: recursion not allowed
-- expect: recursion_not_allowed
-- policy: {"allow_recursive": false}
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10) SELECT i FROM n
-- case: generate_series too large
-- expect: generate_series_too_large
SELECT * FROM generate_series(1, 100000000000)
-- case: generate_series too large with step
-- expect: generate_series_too_large
SELECT generate_series(0, 1e12, 2)
-- case: generate_series per microsecond over a year
-- expect: generate_series_too_large
SELECT * FROM generate_series('2024-01-01'::timestamp, '2025-01-01'::timestamp, '1 microsecond'::interval)
-- case: generate_series to infinity
-- expect: generate_series_too_large
SELECT * FROM generate_series(now(), 'infinity'::timestamp, interval '1 day')
-- case: generate_series in lateral
-- expect: generate_series_too_large
SELECT * FROM orders o CROSS JOIN LATERAL generate_series(1, 99999999999) g
-- case: generate_series policy limit
-- expect: generate_series_too_large
-- policy: {"max_generate_series": 100}
SELECT * FROM generate_series(1, 1000)
-- case: join on a constant predicate (issue 10)
-- expect: cartesian_product
SELECT count(*) FROM products p JOIN products p2 ON 2 = 2
-- case: join on a predicate touching one side
-- expect: cartesian_product
SELECT count(*) FROM customers a JOIN customers b ON a.city IS NOT NULL
-- case: join relating the sides only by inequality
-- expect: cartesian_product
SELECT count(*) FROM orders o JOIN payments p ON p.order_id <> o.order_id
-- case: join by IS DISTINCT FROM
-- expect: cartesian_product
SELECT count(*) FROM orders o JOIN payments p ON p.order_id IS DISTINCT FROM o.order_id
-- case: join by NOT equality
-- expect: cartesian_product
SELECT count(*) FROM orders o JOIN payments p ON NOT (p.order_id = o.order_id)
-- case: join with an OR of inequalities
-- expect: cartesian_product
SELECT count(*) FROM orders o JOIN payments p ON p.order_id <> o.order_id OR p.amount <> o.total_amount
-- case: join with one-sided conjuncts on both sides
-- expect: cartesian_product
SELECT count(*) FROM orders o JOIN customers c ON o.total_amount > 10 AND c.city = 'Paris'
-- case: left join on true
-- expect: cartesian_product
SELECT count(*) FROM orders o LEFT JOIN customers c ON true
-- case: full join on a constant
-- expect: cartesian_product
SELECT count(*) FROM orders o FULL JOIN customers c ON 1 = 1
-- case: where relates only by inequality
-- expect: cartesian_product
SELECT count(*) FROM orders a, orders b WHERE a.order_id <> b.order_id
-- case: cartesian under json_agg of whole rows
-- expect: cartesian_product
SELECT json_agg(to_json(t)) FROM (SELECT o.* FROM orders o JOIN customers c ON c.customer_id IS NOT NULL) t
-- case: join whose equality is or-ed with a constant
-- expect: cartesian_product
SELECT count(*) FROM orders o JOIN customers c ON c.customer_id = o.customer_id OR true
-- case: join whose equality is or-ed with a one-sided test
-- expect: cartesian_product
SELECT count(*) FROM orders o JOIN customers c ON c.customer_id = o.customer_id OR o.total_amount > 0
-- case: join whose predicate touches the same side twice
-- expect: cartesian_product
SELECT count(*) FROM orders a JOIN orders b ON a.order_id = a.order_id
-- case: cross product of two subqueries joined on a constant
-- expect: cartesian_product
SELECT count(*) FROM (SELECT * FROM orders) a JOIN (SELECT * FROM orders) b ON 1 = 1
-- case: a table joined to a constant generate_series under json_agg
-- expect: cartesian_product
SELECT json_agg(to_json(t)) FROM orders t JOIN generate_series(1, 8000) g ON true
-- case: a table comma-joined to a constant generate_series
-- expect: cartesian_product
SELECT count(*) FROM orders o, generate_series(1, 8000) g
-- case: a table cross-joined to a constant unnest
-- expect: cartesian_product
SELECT count(*) FROM orders o CROSS JOIN unnest(ARRAY[1, 2, 3]) AS u(x)
-- case: an unaliased constant series joined on a constant
-- expect: cartesian_product
SELECT count(*) FROM products p JOIN generate_series(1, 5000) ON 1 = 1

-- case: a walk over a derived table that multiplies rows is no walk over stored data
-- expect: unbounded_recursion
WITH RECURSIVE chain(order_id) AS (SELECT 1 UNION ALL SELECT o.order_id FROM (SELECT generate_series(1, 1000) AS order_id, customer_id FROM orders) AS o JOIN chain c ON o.customer_id = c.order_id) SELECT count(*) FROM chain

-- case: a walk over a grouped derived table
-- expect: unbounded_recursion
WITH RECURSIVE chain(n) AS (SELECT 1 UNION ALL SELECT o.n FROM (SELECT count(*) AS n FROM orders) AS o JOIN chain c ON o.n = c.n) SELECT count(*) FROM chain
-- case: count(*) over a cross join counts the product
-- expect: cartesian_product
SELECT count(DISTINCT o.customer_id), count(*) FROM orders o CROSS JOIN customers c
-- case: a sum over a cross join is multiplied by the other side
-- expect: cartesian_product
SELECT sum(o.total_amount), count(DISTINCT c.customer_id) FROM orders o, customers c
-- case: one aggregate reading both sides of a cross join
-- expect: cartesian_product
SELECT count(DISTINCT o.customer_id || c.city) FROM orders o, customers c
-- case: an aggregate filtered by the other side of a cross join
-- expect: cartesian_product
SELECT count(DISTINCT o.order_id) FILTER (WHERE c.city = 'Paris'), max(c.city) FROM orders o, customers c
-- case: a side of a cross join no aggregate reads
-- expect: cartesian_product
SELECT count(DISTINCT o.customer_id) FROM orders o, customers c
-- case: unqualified columns over a cross join cannot be attributed
-- expect: cartesian_product
SELECT count(DISTINCT customer_id), count(DISTINCT city) FROM orders o, customers c
-- case: distinct counts per group over a cross join
-- expect: cartesian_product
SELECT c.city, count(DISTINCT o.order_id) FROM orders o, customers c GROUP BY c.city
-- case: a whole row in an aggregate over a cross join
-- expect: cartesian_product
SELECT count(DISTINCT o.order_id), max(c.*) FROM orders o, customers c
-- case: a scalar subquery beside independent aggregates
-- expect: cartesian_product
SELECT count(DISTINCT o.order_id), (SELECT max(x.y) FROM big x) FROM orders o, customers c
-- case: an aggregate subquery whose set-returning function yields many rows
-- expect: cartesian_product
SELECT s.n FROM (SELECT count(*) AS n, generate_series(1, 100000) AS g FROM orders) s, customers c
-- case: a windowed count without an aggregate is one row per input row
-- expect: cartesian_product
SELECT x.n FROM (SELECT count(*) OVER () AS n FROM orders) x, customers c
-- case: independent distinct counts under a window
-- expect: cartesian_product
SELECT count(DISTINCT o.order_id) OVER (), max(c.city) OVER () FROM orders o, customers c
