-- case: two one-row subqueries divided, one value cast
SELECT a.n / b.n AS ratio FROM (SELECT CAST(count(*) AS real) AS n FROM orders WHERE status = 'returned') a, (SELECT count(*) AS n FROM orders) b
-- case: one-row subqueries computed from their aggregates
SELECT r.x * 100.0 / t.y FROM (SELECT sum(total_amount) * 1.0 AS x FROM orders WHERE channel = 'web') r CROSS JOIN (SELECT nullif(sum(total_amount), 0) AS y FROM orders) t
-- case: one-row ctes whose aggregates are rounded and coalesced
WITH a AS (SELECT round(count(*)::numeric, 2) AS n FROM orders), b AS (SELECT coalesce(count(*), 0) AS n FROM customers) SELECT a.n / b.n FROM a, b
-- case: one-row subquery with an aggregate under a window over it
SELECT t.total, c.name FROM (SELECT sum(count(*)) OVER () AS total FROM orders) t, categories c
-- case: two independent distinct counts over a cross join
SELECT count(DISTINCT o.customer_id) AS buyers, count(DISTINCT c.customer_id) AS customers FROM orders o CROSS JOIN customers c
-- case: a ratio of independent distinct counts over a comma join
SELECT count(DISTINCT o.customer_id)::numeric / count(DISTINCT c.customer_id) FROM orders o, customers c
-- case: independent min and max over a cross join with a filter on each side
SELECT min(o.ordered_at), max(c.signup_date) FROM orders o, customers c WHERE o.status = 'returned' AND c.is_active
