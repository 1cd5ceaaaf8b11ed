-- case: simple aggregate
SELECT region, count(*), sum(amount) FROM orders GROUP BY region ORDER BY 2 DESC LIMIT 10
-- case: join with on
SELECT c.name, sum(o.amount) AS total FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY c.name
-- case: comma join linked in where
SELECT c.name, o.amount FROM orders o, customers c WHERE o.customer_id = c.id
-- case: left join and using
SELECT p.name, coalesce(sum(oi.quantity), 0) FROM products p LEFT JOIN order_items oi USING (product_id) GROUP BY p.name
-- case: cte
WITH monthly AS (
  SELECT date_trunc('month', created_at) AS m, sum(amount) AS revenue FROM orders GROUP BY 1
)
SELECT m, revenue, revenue - lag(revenue) OVER (ORDER BY m) AS delta FROM monthly ORDER BY m
-- case: recursive cte bounded by where
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) SELECT sum(i) FROM n
-- case: recursive cte bounded by join (org chart)
WITH RECURSIVE chain AS (
  SELECT id, manager_id, name, 1 AS depth FROM employees WHERE manager_id IS NULL
  UNION ALL
  SELECT e.id, e.manager_id, e.name, c.depth + 1 FROM employees e JOIN chain c ON e.manager_id = c.id
)
SELECT * FROM chain ORDER BY depth
-- case: recursive cte bounded by limit outside
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n LIMIT 10
-- case: window functions
SELECT id, amount,
       row_number() OVER w, rank() OVER w, dense_rank() OVER w, ntile(4) OVER w,
       first_value(amount) OVER w, last_value(amount) OVER w, lead(amount, 1) OVER w,
       sum(amount) OVER (PARTITION BY region ORDER BY created_at ROWS BETWEEN 6 PRECEDING AND CURRENT ROW)
FROM orders WINDOW w AS (PARTITION BY region ORDER BY amount DESC)
-- case: filter and ordered-set aggregates
SELECT count(*) FILTER (WHERE status = 'paid') AS paid,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) AS median,
       mode() WITHIN GROUP (ORDER BY region),
       string_agg(DISTINCT region, ', ' ORDER BY region), array_agg(id), bool_and(amount > 0),
       json_agg(id), jsonb_object_agg(region, amount), stddev(amount)
FROM orders
-- case: grouping sets rollup cube
SELECT region, status, sum(amount), grouping(region, status) FROM orders GROUP BY GROUPING SETS ((region), (status), ())
-- case: rollup
SELECT region, status, sum(amount) FROM orders GROUP BY ROLLUP (region, status)
-- case: cube
SELECT region, status, sum(amount) FROM orders GROUP BY CUBE (region, status)
-- case: distinct on
SELECT DISTINCT ON (customer_id) customer_id, id, created_at FROM orders ORDER BY customer_id, created_at DESC
-- case: lateral subquery
SELECT c.id, last.amount FROM customers c CROSS JOIN LATERAL (
  SELECT amount FROM orders o WHERE o.customer_id = c.id ORDER BY created_at DESC LIMIT 1) last
-- case: lateral left join on true
SELECT c.id, x.n FROM customers c LEFT JOIN LATERAL (SELECT count(*) AS n FROM orders o WHERE o.customer_id = c.id) x ON true
-- case: json operators
SELECT payload->>'type', payload->'user'->>'id', payload #> '{a,b}', payload #>> '{a,b}'
FROM events WHERE payload @> '{"kind": "click"}' AND payload ? 'user' AND payload ?| array['a', 'b']
-- case: jsonb functions and set-returning join
SELECT e.id, j.value FROM events e, jsonb_array_elements(e.payload->'items') j
WHERE jsonb_extract_path_text(e.payload, 'kind') = 'order'
-- case: json builders
SELECT json_build_object('id', id, 'amount', amount), jsonb_build_array(1, 2), to_jsonb(amount) FROM orders
-- case: arrays
SELECT id FROM orders WHERE region = ANY (ARRAY['EU', 'US']) AND array_length(tags, 1) > 0 AND cardinality(tags) < 5
-- case: unnest
SELECT t, count(*) FROM orders, unnest(tags) AS t GROUP BY t
-- case: unnest in lateral
SELECT o.id, t.tag FROM orders o CROSS JOIN LATERAL unnest(o.tags) AS t(tag)
-- case: values
VALUES (1, 'a'), (2, 'b')
-- case: values in from
SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(id, name)
-- case: table
TABLE orders
-- case: union intersect except
SELECT id FROM a UNION SELECT id FROM b INTERSECT SELECT id FROM c EXCEPT SELECT id FROM d
-- case: union all with order by
(SELECT id, 'a' AS src FROM a) UNION ALL (SELECT id, 'b' FROM b) ORDER BY id LIMIT 5
-- case: explain
EXPLAIN SELECT * FROM orders WHERE id = 1
-- case: explain format json
EXPLAIN (FORMAT JSON, COSTS false, VERBOSE) SELECT region, count(*) FROM orders GROUP BY region
-- case: explain analyze false
EXPLAIN (ANALYZE false) SELECT 1
-- case: explain verbose legacy
EXPLAIN VERBOSE SELECT 1
-- case: date and time functions
SELECT date_trunc('week', created_at), extract(year FROM created_at), to_char(created_at, 'YYYY-MM'),
       to_date('2024-01-01', 'YYYY-MM-DD'), age(now(), created_at), make_date(2024, 1, 1), now(),
       current_date, current_timestamp, created_at AT TIME ZONE 'UTC', date_part('dow', created_at)
FROM orders WHERE created_at >= now() - interval '30 days'
-- case: string functions
SELECT lower(name), upper(name), initcap(name), substring(name FROM 1 FOR 3), position('a' IN name),
       trim(name), left(name, 2), length(name), replace(name, 'a', 'b'), split_part(email, '@', 2),
       concat_ws(' ', name, email), regexp_replace(name, '[0-9]+', ''), name || '!' FROM customers
-- case: math, casts and conditionals
SELECT round(avg(amount)::numeric, 2), abs(min(amount)), ceil(max(amount)), greatest(1, 2), least(3, 4),
       nullif(count(*), 0), coalesce(sum(amount), 0), CAST(count(*) AS bigint), count(*)::float8
FROM orders
-- case: case expression
SELECT CASE WHEN amount > 100 THEN 'big' WHEN amount > 10 THEN 'mid' ELSE 'small' END AS size, count(*)
FROM orders GROUP BY 1
-- case: generate_series bounded calendar
SELECT d::date, count(o.id) FROM generate_series('2024-01-01'::date, '2024-12-31'::date, interval '1 day') d
LEFT JOIN orders o ON o.created_at::date = d::date GROUP BY 1
-- case: generate_series with computed bounds
SELECT m FROM generate_series(date_trunc('month', now()) - interval '11 months', date_trunc('month', now()), interval '1 month') m
-- case: generate_series small numeric
SELECT g FROM generate_series(1, 100) g
-- case: join with a one-row aggregate subquery
SELECT o.id, o.amount / t.total FROM orders o, (SELECT sum(amount) AS total FROM orders) t
-- case: join with a one-row cte
WITH t AS (SELECT sum(amount) AS total FROM orders) SELECT o.id, o.amount / t.total FROM orders o CROSS JOIN t
-- case: scalar subquery and exists
SELECT c.id, (SELECT count(*) FROM orders o WHERE o.customer_id = c.id) AS n FROM customers c
WHERE EXISTS (SELECT * FROM orders o WHERE o.customer_id = c.id)
-- case: in subquery
SELECT * FROM products WHERE id IN (SELECT product_id FROM order_items WHERE quantity > 5)
-- case: pg_catalog qualified builtin
SELECT pg_catalog.lower(name), pg_catalog.count(*) FROM customers GROUP BY 1
-- case: harmless catalogs
SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'
-- case: pg_class and pg_namespace while nothing is hidden
SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
-- case: fetch first and offset
SELECT id FROM orders ORDER BY id OFFSET 10 ROWS FETCH FIRST 5 ROWS ONLY
-- case: is distinct from and between
SELECT id FROM orders WHERE status IS DISTINCT FROM 'x' AND amount BETWEEN 1 AND 10 AND name ILIKE '%a%'
-- case: builtin operator spelled out
SELECT 1 OPERATOR(pg_catalog.+) 2
-- case: tablesample
SELECT count(*) FROM orders TABLESAMPLE bernoulli (10) REPEATABLE (42)
