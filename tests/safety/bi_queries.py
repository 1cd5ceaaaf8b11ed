"""Typical BI queries over the demo schema, in the style of public text-to-SQL benchmarks' gold SQL (Spider,
BIRD): joins, GROUP BY/HAVING, window functions, CTEs, date_trunc, ranges, subqueries. The static bounds and
the cost gate must let every one through with default limits."""

BI_QUERIES: tuple[str, ...] = (
    "SELECT count(*) FROM customers",
    "SELECT segment, count(*) AS n FROM customers GROUP BY segment ORDER BY n DESC",
    "SELECT country, count(*) FROM customers WHERE is_active GROUP BY country HAVING count(*) > 10 ORDER BY 2 DESC",
    "SELECT r.name, count(c.customer_id) FROM regions r LEFT JOIN customers c ON c.region_id = r.region_id "
    "GROUP BY r.name",
    "SELECT date_trunc('month', ordered_at) AS month, sum(total_amount) FROM orders GROUP BY 1 ORDER BY 1",
    "SELECT channel, avg(total_amount) FROM orders WHERE status = 'delivered' GROUP BY channel",
    "SELECT p.name, sum(oi.quantity) AS units FROM order_items oi JOIN products p ON p.product_id = oi.product_id "
    "GROUP BY p.name ORDER BY units DESC LIMIT 10",
    "SELECT cat.name, sum(oi.quantity * oi.unit_price * (1 - oi.discount_pct)) AS revenue FROM order_items oi "
    "JOIN products p ON p.product_id = oi.product_id JOIN categories cat ON cat.category_id = p.category_id "
    "GROUP BY cat.name ORDER BY revenue DESC",
    "SELECT c.first_name, c.last_name, count(o.order_id) FROM customers c JOIN orders o ON o.customer_id = "
    "c.customer_id GROUP BY c.customer_id, c.first_name, c.last_name ORDER BY 3 DESC LIMIT 5",
    "SELECT method, count(*) FILTER (WHERE status = 'failed')::float / count(*) AS failure_rate FROM payments "
    "GROUP BY method",
    "WITH monthly AS (SELECT date_trunc('month', ordered_at) AS m, sum(total_amount) AS revenue FROM orders "
    "GROUP BY 1) SELECT m, revenue, revenue - lag(revenue) OVER (ORDER BY m) AS change FROM monthly ORDER BY m",
    "SELECT customer_id, order_id, total_amount, rank() OVER (PARTITION BY customer_id ORDER BY total_amount DESC) "
    "FROM orders WHERE customer_id < 100",
    "SELECT product_id, list_price, avg(list_price) OVER (PARTITION BY category_id) AS category_avg FROM products",
    "SELECT date_trunc('week', occurred_at) AS week, event_type, count(*) FROM events GROUP BY 1, 2 ORDER BY 1, 2",
    "SELECT payload->>'page' AS page, count(*) FROM events WHERE event_type = 'page_view' GROUP BY 1 "
    "ORDER BY 2 DESC LIMIT 10",
    "SELECT count(DISTINCT session_id) FROM events WHERE occurred_at >= timestamp '2024-01-01' "
    "AND occurred_at < timestamp '2024-02-01'",
    "SELECT o.order_id, o.total_amount, sum(p.amount) AS paid FROM orders o LEFT JOIN payments p ON p.order_id = "
    "o.order_id AND p.status = 'captured' GROUP BY o.order_id, o.total_amount HAVING sum(p.amount) < o.total_amount",
    "SELECT e.first_name, e.last_name, m.first_name AS manager FROM employees e LEFT JOIN employees m ON "
    "m.employee_id = e.manager_id",
    "SELECT e.department, count(*) FROM employees e GROUP BY e.department ORDER BY 2 DESC",
    "SELECT sales_rep_id, sum(total_amount) FROM orders WHERE sales_rep_id IS NOT NULL GROUP BY 1 ORDER BY 2 DESC",
    "SELECT extract(year FROM ordered_at) AS y, extract(quarter FROM ordered_at) AS q, count(*) FROM orders "
    "GROUP BY 1, 2 ORDER BY 1, 2",
    "SELECT status, percentile_cont(0.5) WITHIN GROUP (ORDER BY total_amount) FROM orders GROUP BY status",
    "SELECT avg(delivered_at - shipped_at) FROM orders WHERE delivered_at IS NOT NULL",
    "SELECT brand, count(*) FROM products WHERE NOT is_discontinued GROUP BY brand ORDER BY 2 DESC LIMIT 5",
    "SELECT customer_id FROM orders GROUP BY customer_id HAVING count(*) >= 10",
    "SELECT c.customer_id FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = "
    "c.customer_id)",
    "SELECT c.customer_id, c.city FROM customers c WHERE c.customer_id IN (SELECT customer_id FROM orders "
    "WHERE total_amount > 1000)",
    "SELECT p.product_id, p.name FROM products p WHERE p.list_price > (SELECT avg(list_price) FROM products)",
    "SELECT discount_code, count(*), avg(total_amount) FROM orders WHERE discount_code IS NOT NULL "
    "GROUP BY discount_code ORDER BY 2 DESC",
    "WITH first_orders AS (SELECT customer_id, min(ordered_at) AS first_at FROM orders GROUP BY customer_id) "
    "SELECT date_trunc('month', first_at) AS cohort, count(*) FROM first_orders GROUP BY 1 ORDER BY 1",
    "WITH firsts AS (SELECT customer_id, min(date_trunc('month', ordered_at)) AS cohort FROM orders GROUP BY 1) "
    "SELECT f.cohort, date_trunc('month', o.ordered_at) AS month, count(DISTINCT o.customer_id) FROM firsts f "
    "JOIN orders o ON o.customer_id = f.customer_id GROUP BY 1, 2 ORDER BY 1, 2",
    "SELECT a.order_id, sum(b.total_amount) AS rolling FROM orders a JOIN orders b ON b.customer_id = a.customer_id "
    "AND b.ordered_at BETWEEN a.ordered_at - interval '30 days' AND a.ordered_at GROUP BY a.order_id LIMIT 100",
    "SELECT d::date AS day, count(o.order_id) FROM generate_series(date '2024-01-01', date '2024-01-31', "
    "interval '1 day') d LEFT JOIN orders o ON o.ordered_at >= d AND o.ordered_at < d + interval '1 day' "
    "GROUP BY 1 ORDER BY 1",
    "SELECT ordered_at::date, sum(total_amount) OVER (ORDER BY ordered_at::date ROWS BETWEEN 6 PRECEDING AND "
    "CURRENT ROW) FROM orders WHERE ordered_at >= timestamp '2024-06-01' ORDER BY 1 LIMIT 100",
    "SELECT ntile(4) OVER (ORDER BY total_amount) AS quartile, order_id FROM orders LIMIT 50",
    "SELECT p.name, p.list_price - p.unit_cost AS margin FROM products p ORDER BY margin DESC LIMIT 10",
    "SELECT c.segment, r.name, round(avg(o.total_amount), 2) FROM orders o JOIN customers c ON c.customer_id = "
    "o.customer_id JOIN regions r ON r.region_id = c.region_id GROUP BY ROLLUP (c.segment, r.name)",
    "SELECT channel, status, count(*) FROM orders GROUP BY CUBE (channel, status)",
    "SELECT to_char(ordered_at, 'YYYY-MM') AS month, count(*) FROM orders GROUP BY 1 ORDER BY 1",
    "SELECT lpad(order_id::text, 8, '0') AS ref, total_amount FROM orders ORDER BY order_id LIMIT 20",
    "SELECT c.city, count(*) FROM customers c WHERE c.city ~ '^S' GROUP BY c.city",
    "SELECT name FROM products WHERE name ILIKE '%wireless%'",
    "SELECT regexp_replace(sku, '-', '', 'g') FROM products LIMIT 10",
    "SELECT o1.order_id, o2.order_id FROM orders o1 JOIN orders o2 ON o1.customer_id = o2.customer_id "
    "AND o1.order_id < o2.order_id AND o2.ordered_at < o1.ordered_at + interval '1 day' LIMIT 50",
    "SELECT s.method, s.n, s.n * 100.0 / sum(s.n) OVER () AS pct FROM (SELECT method, count(*) AS n FROM payments "
    "GROUP BY method) s",
    "SELECT customer_id, ordered_at, ordered_at - lag(ordered_at) OVER (PARTITION BY customer_id ORDER BY "
    "ordered_at) AS gap FROM orders WHERE customer_id BETWEEN 1 AND 50",
    "SELECT cat.department, count(DISTINCT p.product_id), max(p.list_price) FROM categories cat JOIN products p "
    "ON p.category_id = cat.category_id GROUP BY cat.department",
    "SELECT count(*) FILTER (WHERE shipped_at IS NULL) AS unshipped, count(*) FROM orders WHERE status <> "
    "'cancelled'",
    "SELECT event_type, count(*) FROM events WHERE customer_id IS NOT NULL GROUP BY event_type",
    "WITH ranked AS (SELECT p.category_id, p.name, sum(oi.quantity) AS units, row_number() OVER (PARTITION BY "
    "p.category_id ORDER BY sum(oi.quantity) DESC) AS rn FROM order_items oi JOIN products p ON p.product_id = "
    "oi.product_id GROUP BY p.category_id, p.name) SELECT * FROM ranked WHERE rn <= 3",
    "SELECT c.country, sum(o.total_amount) FROM customers c JOIN orders o USING (customer_id) GROUP BY c.country "
    "ORDER BY 2 DESC LIMIT 10",
    "SELECT date_trunc('day', paid_at), sum(amount) FROM payments WHERE paid_at >= now() - interval '90 days' "
    "GROUP BY 1 ORDER BY 1",
    "SELECT x.month, x.orders, y.signups FROM (SELECT date_trunc('month', ordered_at) AS month, count(*) AS orders "
    "FROM orders GROUP BY 1) x LEFT JOIN (SELECT date_trunc('month', signup_date) AS month, count(*) AS signups "
    "FROM customers GROUP BY 1) y ON y.month = x.month ORDER BY 1",
)
