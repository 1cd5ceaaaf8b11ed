-- policy-default: {"hidden_columns": ["customers.email", "employees.salary", "employees.email"]}
-- Ordinary analyst queries over the demo schema that touch the tables with hidden columns through visible
-- columns only (joins, windows, CTEs, recursion, grouping sets, JSON, string and date functions): the
-- twins of blocked/attack.sql. Each runs on the demo database.
-- case: ordinary 1: SELECT r.name AS region, count(*) AS customers FROM customers c JOIN r
SELECT r.name AS region, count(*) AS customers FROM customers c JOIN regions r ON r.region_id = c.region_id GROUP BY r.name ORDER BY customers DESC
-- case: ordinary 2: SELECT c.segment, count(DISTINCT c.customer_id) AS buyers FROM custome
SELECT c.segment, count(DISTINCT c.customer_id) AS buyers FROM customers c JOIN orders o ON o.customer_id = c.customer_id GROUP BY c.segment
-- case: ordinary 3: SELECT e.first_name || ' ' || e.last_name AS rep, count(o.order_id) AS
SELECT e.first_name || ' ' || e.last_name AS rep, count(o.order_id) AS orders FROM employees e LEFT JOIN orders o ON o.sales_rep_id = e.employee_id GROUP BY e.employee_id, e.first_name, e.last_name ORDER BY orders DESC LIMIT 10
-- case: ordinary 4: SELECT department, count(*) AS headcount FROM employees GROUP BY depar
SELECT department, count(*) AS headcount FROM employees GROUP BY department ORDER BY headcount DESC
-- case: ordinary 5: SELECT job_title, count(*) FROM employees GROUP BY job_title HAVING co
SELECT job_title, count(*) FROM employees GROUP BY job_title HAVING count(*) > 1
-- case: ordinary 6: SELECT date_trunc('month', hire_date)::date AS month, count(*) AS hire
SELECT date_trunc('month', hire_date)::date AS month, count(*) AS hires FROM employees GROUP BY 1 ORDER BY 1
-- case: ordinary 7: SELECT m.first_name AS manager, count(e.employee_id) AS reports FROM e
SELECT m.first_name AS manager, count(e.employee_id) AS reports FROM employees e JOIN employees m ON m.employee_id = e.manager_id GROUP BY m.employee_id, m.first_name ORDER BY reports DESC
-- case: ordinary 8: WITH RECURSIVE chain AS (SELECT employee_id, manager_id, first_name, 1
WITH RECURSIVE chain AS (SELECT employee_id, manager_id, first_name, 1 AS depth FROM employees WHERE manager_id IS NULL UNION ALL SELECT e.employee_id, e.manager_id, e.first_name, c.depth + 1 FROM employees e JOIN chain c ON e.manager_id = c.employee_id) SELECT depth, count(*) FROM chain GROUP BY depth ORDER BY depth
-- case: ordinary 9: SELECT c.first_name, c.last_name, c.company_name, c.city FROM customer
SELECT c.first_name, c.last_name, c.company_name, c.city FROM customers c WHERE c.segment = 'Enterprise' ORDER BY c.signup_date DESC LIMIT 20
-- case: ordinary 10: SELECT country, count(*) AS customers, sum(CASE WHEN is_active THEN 1 
SELECT country, count(*) AS customers, sum(CASE WHEN is_active THEN 1 ELSE 0 END) AS active FROM customers GROUP BY country ORDER BY customers DESC
-- case: ordinary 11: SELECT c.customer_id, c.first_name, sum(o.total_amount) AS revenue FRO
SELECT c.customer_id, c.first_name, sum(o.total_amount) AS revenue FROM customers c JOIN orders o USING (customer_id) WHERE o.status <> 'cancelled' GROUP BY c.customer_id, c.first_name ORDER BY revenue DESC LIMIT 10
-- case: ordinary 12: SELECT o.* FROM orders o JOIN customers c ON c.customer_id = o.custome
SELECT o.* FROM orders o JOIN customers c ON c.customer_id = o.customer_id WHERE c.segment = 'Consumer' LIMIT 5
-- case: ordinary 13: SELECT o.order_id, c.first_name, c.last_name FROM orders o JOIN custom
SELECT o.order_id, c.first_name, c.last_name FROM orders o JOIN customers c USING (customer_id) ORDER BY o.ordered_at DESC LIMIT 10
-- case: ordinary 14: SELECT to_char(ordered_at, 'YYYY-MM') AS month, round(sum(total_amount
SELECT to_char(ordered_at, 'YYYY-MM') AS month, round(sum(total_amount), 2) AS revenue FROM orders WHERE status <> 'cancelled' GROUP BY 1 ORDER BY 1
-- case: ordinary 15: SELECT extract(year FROM ordered_at) AS year, extract(quarter FROM ord
SELECT extract(year FROM ordered_at) AS year, extract(quarter FROM ordered_at) AS quarter, count(*) FROM orders GROUP BY 1, 2 ORDER BY 1, 2
-- case: ordinary 16: SELECT channel, status, count(*) FROM orders GROUP BY ROLLUP (channel,
SELECT channel, status, count(*) FROM orders GROUP BY ROLLUP (channel, status)
-- case: ordinary 17: SELECT channel, status, count(*) FROM orders GROUP BY CUBE (channel, s
SELECT channel, status, count(*) FROM orders GROUP BY CUBE (channel, status)
-- case: ordinary 18: SELECT channel, status, count(*) FROM orders GROUP BY GROUPING SETS ((
SELECT channel, status, count(*) FROM orders GROUP BY GROUPING SETS ((channel), (status), ())
-- case: ordinary 19: SELECT customer_id, order_id, total_amount, sum(total_amount) OVER (PA
SELECT customer_id, order_id, total_amount, sum(total_amount) OVER (PARTITION BY customer_id ORDER BY ordered_at ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running FROM orders LIMIT 50
-- case: ordinary 20: SELECT customer_id, order_id, rank() OVER w, lag(total_amount) OVER w 
SELECT customer_id, order_id, rank() OVER w, lag(total_amount) OVER w FROM orders WINDOW w AS (PARTITION BY customer_id ORDER BY ordered_at) LIMIT 50
-- case: ordinary 21: SELECT DISTINCT ON (customer_id) customer_id, order_id, ordered_at FRO
SELECT DISTINCT ON (customer_id) customer_id, order_id, ordered_at FROM orders ORDER BY customer_id, ordered_at DESC
-- case: ordinary 22: SELECT p.name, c.name AS category, p.list_price FROM products p JOIN c
SELECT p.name, c.name AS category, p.list_price FROM products p JOIN categories c ON c.category_id = p.category_id WHERE NOT p.is_discontinued ORDER BY p.list_price DESC LIMIT 10
-- case: ordinary 23: SELECT c.department, round(avg(p.list_price - p.unit_cost), 2) AS marg
SELECT c.department, round(avg(p.list_price - p.unit_cost), 2) AS margin FROM products p JOIN categories c USING (category_id) GROUP BY c.department
-- case: ordinary 24: SELECT brand, count(*) FILTER (WHERE is_discontinued) AS discontinued,
SELECT brand, count(*) FILTER (WHERE is_discontinued) AS discontinued, count(*) AS total FROM products GROUP BY brand ORDER BY total DESC
-- case: ordinary 25: SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY total_amount) AS me
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY total_amount) AS median_order FROM orders WHERE status <> 'cancelled'
-- case: ordinary 26: SELECT method, status, count(*), sum(amount) FROM payments GROUP BY me
SELECT method, status, count(*), sum(amount) FROM payments GROUP BY method, status ORDER BY method, status
-- case: ordinary 27: SELECT o.order_id FROM orders o WHERE NOT EXISTS (SELECT 1 FROM paymen
SELECT o.order_id FROM orders o WHERE NOT EXISTS (SELECT 1 FROM payments p WHERE p.order_id = o.order_id AND p.status = 'captured') AND o.status = 'delivered' LIMIT 20
-- case: ordinary 28: SELECT event_type, count(*) FROM events GROUP BY event_type
SELECT event_type, count(*) FROM events GROUP BY event_type
-- case: ordinary 29: SELECT payload->>'page' AS page, count(*) FROM events WHERE event_type
SELECT payload->>'page' AS page, count(*) FROM events WHERE event_type = 'page_view' GROUP BY 1 ORDER BY 2 DESC LIMIT 10
-- case: ordinary 30: SELECT date_trunc('week', occurred_at) AS week, count(DISTINCT session
SELECT date_trunc('week', occurred_at) AS week, count(DISTINCT session_id) AS sessions FROM events GROUP BY 1 ORDER BY 1
-- case: ordinary 31: SELECT c.segment, count(e.event_id) FROM events e JOIN customers c ON 
SELECT c.segment, count(e.event_id) FROM events e JOIN customers c ON c.customer_id = e.customer_id GROUP BY c.segment
-- case: ordinary 32: SELECT r.code, r.name, count(DISTINCT e.employee_id) AS staff, count(D
SELECT r.code, r.name, count(DISTINCT e.employee_id) AS staff, count(DISTINCT c.customer_id) AS customers FROM regions r LEFT JOIN employees e ON e.region_id = r.region_id LEFT JOIN customers c ON c.region_id = r.region_id GROUP BY r.code, r.name
-- case: ordinary 33: SELECT e.first_name, e.last_name, e.hire_date, age(current_date, e.hir
SELECT e.first_name, e.last_name, e.hire_date, age(current_date, e.hire_date) AS tenure FROM employees e ORDER BY e.hire_date LIMIT 10
-- case: ordinary 34: SELECT first_name, last_name FROM employees WHERE hire_date >= DATE '2
SELECT first_name, last_name FROM employees WHERE hire_date >= DATE '2020-01-01' AND department = 'Sales'
-- case: ordinary 35: SELECT initcap(lower(first_name)) AS name, length(last_name) AS len FR
SELECT initcap(lower(first_name)) AS name, length(last_name) AS len FROM customers WHERE city ILIKE 's%' LIMIT 10
-- case: ordinary 36: SELECT split_part(company_name, ' ', 1) AS first_word, count(*) FROM c
SELECT split_part(company_name, ' ', 1) AS first_word, count(*) FROM customers WHERE company_name IS NOT NULL GROUP BY 1 ORDER BY 2 DESC LIMIT 10
-- case: ordinary 37: SELECT coalesce(company_name, first_name || ' ' || last_name) AS displ
SELECT coalesce(company_name, first_name || ' ' || last_name) AS display_name FROM customers LIMIT 10
-- case: ordinary 38: SELECT c.customer_id, c.first_name, c.last_name, max(o.ordered_at) AS 
SELECT c.customer_id, c.first_name, c.last_name, max(o.ordered_at) AS last_order FROM customers c LEFT JOIN orders o ON o.customer_id = c.customer_id GROUP BY c.customer_id HAVING max(o.ordered_at) < TIMESTAMP '2024-06-01' OR max(o.ordered_at) IS NULL LIMIT 20
-- case: ordinary 39: WITH monthly AS (SELECT date_trunc('month', ordered_at) AS m, sum(tota
WITH monthly AS (SELECT date_trunc('month', ordered_at) AS m, sum(total_amount) AS revenue FROM orders WHERE status <> 'cancelled' GROUP BY 1) SELECT m, revenue, revenue - lag(revenue) OVER (ORDER BY m) AS change FROM monthly ORDER BY m
-- case: ordinary 40: WITH first_orders AS (SELECT customer_id, min(ordered_at) AS first_at 
WITH first_orders AS (SELECT customer_id, min(ordered_at) AS first_at FROM orders GROUP BY customer_id) SELECT date_trunc('month', first_at)::date AS cohort, count(*) FROM first_orders GROUP BY 1 ORDER BY 1
-- case: ordinary 41: SELECT c.first_name, c.last_name, t.orders FROM customers c JOIN LATER
SELECT c.first_name, c.last_name, t.orders FROM customers c JOIN LATERAL (SELECT count(*) AS orders FROM orders o WHERE o.customer_id = c.customer_id) t ON true ORDER BY t.orders DESC LIMIT 5
-- case: ordinary 42: SELECT c.customer_id, t.order_id FROM customers c CROSS JOIN LATERAL (
SELECT c.customer_id, t.order_id FROM customers c CROSS JOIN LATERAL (SELECT o.order_id FROM orders o WHERE o.customer_id = c.customer_id ORDER BY o.total_amount DESC LIMIT 1) t LIMIT 20
-- case: ordinary 43: SELECT o.channel, round(avg(o.total_amount), 2) AS aov FROM orders o W
SELECT o.channel, round(avg(o.total_amount), 2) AS aov FROM orders o WHERE o.ordered_at BETWEEN '2024-01-01' AND '2024-12-31' GROUP BY o.channel
-- case: ordinary 44: SELECT e.employee_id, e.first_name, e.last_name, r.name AS region FROM
SELECT e.employee_id, e.first_name, e.last_name, r.name AS region FROM employees e LEFT JOIN regions r USING (region_id) WHERE e.job_title ILIKE '%manager%'
-- case: ordinary 45: SELECT e.first_name, m.first_name AS manager_name FROM employees e LEF
SELECT e.first_name, m.first_name AS manager_name FROM employees e LEFT JOIN employees m ON e.manager_id = m.employee_id
-- case: ordinary 46: SELECT c.customer_id, c.first_name, e.first_name AS account_manager FR
SELECT c.customer_id, c.first_name, e.first_name AS account_manager FROM customers c JOIN employees e ON e.employee_id = c.account_manager_id LIMIT 20
-- case: ordinary 47: SELECT e.first_name, count(c.customer_id) AS accounts FROM employees e
SELECT e.first_name, count(c.customer_id) AS accounts FROM employees e JOIN customers c ON c.account_manager_id = e.employee_id GROUP BY e.employee_id, e.first_name ORDER BY accounts DESC
-- case: ordinary 48: SELECT e.first_name, sum(o.total_amount) AS sales FROM employees e JOI
SELECT e.first_name, sum(o.total_amount) AS sales FROM employees e JOIN orders o ON o.sales_rep_id = e.employee_id WHERE o.status NOT IN ('cancelled', 'returned') GROUP BY e.employee_id, e.first_name ORDER BY sales DESC LIMIT 5
-- case: ordinary 49: SELECT p.product_id, p.name, sum(oi.quantity * oi.unit_price * (1 - oi
SELECT p.product_id, p.name, sum(oi.quantity * oi.unit_price * (1 - oi.discount_pct)) AS revenue FROM order_items oi JOIN products p USING (product_id) GROUP BY p.product_id, p.name ORDER BY revenue DESC LIMIT 10
-- case: ordinary 50: SELECT width_bucket(total_amount, 0, 1000, 10) AS bucket, count(*) FRO
SELECT width_bucket(total_amount, 0, 1000, 10) AS bucket, count(*) FROM orders GROUP BY 1 ORDER BY 1
-- case: ordinary 51: SELECT ntile(4) OVER (ORDER BY total_amount) AS quartile, order_id FRO
SELECT ntile(4) OVER (ORDER BY total_amount) AS quartile, order_id FROM orders LIMIT 100
-- case: ordinary 52: SELECT customer_id, count(*) AS orders, percent_rank() OVER (ORDER BY 
SELECT customer_id, count(*) AS orders, percent_rank() OVER (ORDER BY count(*)) FROM orders GROUP BY customer_id LIMIT 50
-- case: ordinary 53: SELECT c.city, count(*) FROM customers c WHERE c.country = 'Germany' G
SELECT c.city, count(*) FROM customers c WHERE c.country = 'Germany' GROUP BY c.city ORDER BY 2 DESC NULLS LAST
-- case: ordinary 54: SELECT signup_date, count(*) OVER (ORDER BY signup_date RANGE BETWEEN 
SELECT signup_date, count(*) OVER (ORDER BY signup_date RANGE BETWEEN INTERVAL '30 days' PRECEDING AND CURRENT ROW) FROM customers LIMIT 20
-- case: ordinary 55: SELECT d::date AS day, count(o.order_id) FROM generate_series(DATE '20
SELECT d::date AS day, count(o.order_id) FROM generate_series(DATE '2024-01-01', DATE '2024-01-31', INTERVAL '1 day') AS d LEFT JOIN orders o ON o.ordered_at::date = d::date GROUP BY 1 ORDER BY 1
-- case: ordinary 56: SELECT customer_id FROM orders WHERE status = 'returned' INTERSECT SEL
SELECT customer_id FROM orders WHERE status = 'returned' INTERSECT SELECT customer_id FROM orders WHERE status = 'delivered'
-- case: ordinary 57: SELECT customer_id FROM customers EXCEPT SELECT customer_id FROM order
SELECT customer_id FROM customers EXCEPT SELECT customer_id FROM orders
-- case: ordinary 58: SELECT 'customer' AS kind, first_name, last_name FROM customers UNION 
SELECT 'customer' AS kind, first_name, last_name FROM customers UNION ALL SELECT 'employee', first_name, last_name FROM employees LIMIT 20
-- case: ordinary 59: SELECT first_name, last_name FROM customers c WHERE c.customer_id IN (
SELECT first_name, last_name FROM customers c WHERE c.customer_id IN (SELECT customer_id FROM orders WHERE total_amount > 500)
-- case: ordinary 60: SELECT c.first_name FROM customers c WHERE EXISTS (SELECT 1 FROM order
SELECT c.first_name FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.customer_id AND o.channel = 'phone')
-- case: ordinary 61: SELECT (SELECT count(*) FROM orders o WHERE o.customer_id = c.customer
SELECT (SELECT count(*) FROM orders o WHERE o.customer_id = c.customer_id) AS n, c.first_name FROM customers c ORDER BY n DESC LIMIT 5
-- case: ordinary 62: SELECT region_id, string_agg(first_name, ', ' ORDER BY first_name) AS 
SELECT region_id, string_agg(first_name, ', ' ORDER BY first_name) AS names FROM employees GROUP BY region_id
-- case: ordinary 63: SELECT array_agg(DISTINCT department ORDER BY department) FROM employe
SELECT array_agg(DISTINCT department ORDER BY department) FROM employees
-- case: ordinary 64: SELECT json_agg(json_build_object('id', employee_id, 'name', first_nam
SELECT json_agg(json_build_object('id', employee_id, 'name', first_name)) FROM employees WHERE department = 'Sales'
-- case: ordinary 65: SELECT jsonb_build_object('customer', c.customer_id, 'city', c.city) F
SELECT jsonb_build_object('customer', c.customer_id, 'city', c.city) FROM customers c LIMIT 3
-- case: ordinary 66: SELECT to_jsonb(r) FROM regions r
SELECT to_jsonb(r) FROM regions r
-- case: ordinary 67: SELECT row_to_json(p) FROM (SELECT product_id, name FROM products LIMI
SELECT row_to_json(p) FROM (SELECT product_id, name FROM products LIMIT 3) p
-- case: ordinary 68: SELECT t.* FROM (SELECT customer_id, first_name FROM customers) t LIMI
SELECT t.* FROM (SELECT customer_id, first_name FROM customers) t LIMIT 5
-- case: ordinary 69: SELECT c.customer_id, c.first_name, c.last_name, c.segment, c.city, c.
SELECT c.customer_id, c.first_name, c.last_name, c.segment, c.city, c.country, c.region_id, c.signup_date, c.is_active FROM customers c LIMIT 10
-- case: ordinary 70: SELECT employee_id, first_name, last_name, job_title, department, mana
SELECT employee_id, first_name, last_name, job_title, department, manager_id, region_id, hire_date FROM employees
-- case: ordinary 71: SELECT count(*) FROM customers
SELECT count(*) FROM customers
-- case: ordinary 72: SELECT count(*) FROM employees
SELECT count(*) FROM employees
-- case: ordinary 73: SELECT count(*) FROM employees e JOIN customers c ON c.account_manager
SELECT count(*) FROM employees e JOIN customers c ON c.account_manager_id = e.employee_id
-- case: ordinary 74: SELECT max(hire_date), min(hire_date) FROM employees
SELECT max(hire_date), min(hire_date) FROM employees
-- case: ordinary 75: SELECT e.department, min(e.hire_date) AS first_hire FROM employees e G
SELECT e.department, min(e.hire_date) AS first_hire FROM employees e GROUP BY e.department
-- case: ordinary 76: SELECT CASE WHEN total_amount >= 1000 THEN 'large' WHEN total_amount >
SELECT CASE WHEN total_amount >= 1000 THEN 'large' WHEN total_amount >= 100 THEN 'medium' ELSE 'small' END AS size, count(*) FROM orders GROUP BY 1
-- case: ordinary 77: SELECT nullif(discount_code, '') AS code, count(*) FROM orders GROUP B
SELECT nullif(discount_code, '') AS code, count(*) FROM orders GROUP BY 1 ORDER BY 2 DESC LIMIT 10
-- case: ordinary 78: SELECT greatest(shipped_at, delivered_at) FROM orders LIMIT 5
SELECT greatest(shipped_at, delivered_at) FROM orders LIMIT 5
-- case: ordinary 79: SELECT order_id, delivered_at - shipped_at AS transit FROM orders WHER
SELECT order_id, delivered_at - shipped_at AS transit FROM orders WHERE delivered_at IS NOT NULL ORDER BY transit DESC LIMIT 10
-- case: ordinary 80: SELECT avg(extract(epoch FROM delivered_at - ordered_at) / 86400) AS a
SELECT avg(extract(epoch FROM delivered_at - ordered_at) / 86400) AS avg_days FROM orders WHERE delivered_at IS NOT NULL
-- case: ordinary 81: SELECT date_part('dow', ordered_at) AS dow, count(*) FROM orders GROUP
SELECT date_part('dow', ordered_at) AS dow, count(*) FROM orders GROUP BY 1 ORDER BY 1
-- case: ordinary 82: SELECT c.first_name FROM customers c WHERE c.last_name ~* '^mc'
SELECT c.first_name FROM customers c WHERE c.last_name ~* '^mc'
-- case: ordinary 83: SELECT c.customer_id, count(o.*) FROM customers c LEFT JOIN orders o O
SELECT c.customer_id, count(o.*) FROM customers c LEFT JOIN orders o ON o.customer_id = c.customer_id GROUP BY c.customer_id LIMIT 10
-- case: ordinary 84: SELECT r.name, e.first_name FROM regions r JOIN employees e ON e.regio
SELECT r.name, e.first_name FROM regions r JOIN employees e ON e.region_id = r.region_id WHERE e.job_title = 'Regional Manager'
-- case: ordinary 85: SELECT e.first_name, e.last_name FROM employees AS e WHERE e.manager_i
SELECT e.first_name, e.last_name FROM employees AS e WHERE e.manager_id = (SELECT employee_id FROM employees WHERE manager_id IS NULL)
-- case: ordinary 86: SELECT employees.first_name, employees.last_name FROM employees ORDER 
SELECT employees.first_name, employees.last_name FROM employees ORDER BY employees.last_name
-- case: ordinary 87: SELECT customers.city, count(*) FROM customers GROUP BY customers.city
SELECT customers.city, count(*) FROM customers GROUP BY customers.city ORDER BY count(*) DESC LIMIT 5
-- case: ordinary 88: SELECT public.customers.city FROM public.customers LIMIT 3
SELECT public.customers.city FROM public.customers LIMIT 3
-- case: ordinary 89: SELECT x.first_name FROM public.employees x LIMIT 3
SELECT x.first_name FROM public.employees x LIMIT 3
-- case: ordinary 90: SELECT first_name, last_name FROM employees e1 WHERE NOT EXISTS (SELEC
SELECT first_name, last_name FROM employees e1 WHERE NOT EXISTS (SELECT 1 FROM employees e2 WHERE e2.manager_id = e1.employee_id)
-- case: ordinary 91: SELECT c.segment, round(100.0 * count(*) / sum(count(*)) OVER (), 1) A
SELECT c.segment, round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS pct FROM customers c GROUP BY c.segment
-- case: ordinary 92: SELECT r.name, count(o.order_id) AS orders, round(sum(o.total_amount),
SELECT r.name, count(o.order_id) AS orders, round(sum(o.total_amount), 2) AS revenue FROM regions r JOIN customers c ON c.region_id = r.region_id JOIN orders o ON o.customer_id = c.customer_id WHERE o.status <> 'cancelled' GROUP BY r.name ORDER BY revenue DESC
-- case: ordinary 93: WITH cust AS (SELECT customer_id, segment FROM customers), rev AS (SEL
WITH cust AS (SELECT customer_id, segment FROM customers), rev AS (SELECT customer_id, sum(total_amount) AS total FROM orders GROUP BY customer_id) SELECT cust.segment, avg(rev.total) FROM cust JOIN rev USING (customer_id) GROUP BY cust.segment
-- case: ordinary 94: WITH emp AS (SELECT employee_id, first_name, department FROM employees
WITH emp AS (SELECT employee_id, first_name, department FROM employees) SELECT department, count(*) FROM emp GROUP BY department
-- case: ordinary 95: WITH customers_2024 AS (SELECT customer_id FROM customers WHERE signup
WITH customers_2024 AS (SELECT customer_id FROM customers WHERE signup_date >= '2024-01-01') SELECT count(*) FROM customers_2024
-- case: ordinary 96: SELECT o.order_id, oi.line_no, p.name FROM orders o JOIN order_items o
SELECT o.order_id, oi.line_no, p.name FROM orders o JOIN order_items oi ON oi.order_id = o.order_id JOIN products p ON p.product_id = oi.product_id WHERE o.order_id = 1000
-- case: ordinary 97: SELECT c.name AS category, sum(oi.quantity) FROM order_items oi JOIN p
SELECT c.name AS category, sum(oi.quantity) FROM order_items oi JOIN products p USING (product_id) JOIN categories c USING (category_id) GROUP BY c.name
-- case: ordinary 98: SELECT customer_id, sum(total_amount) FILTER (WHERE status = 'returned
SELECT customer_id, sum(total_amount) FILTER (WHERE status = 'returned') AS returned_value FROM orders GROUP BY customer_id HAVING sum(total_amount) FILTER (WHERE status = 'returned') > 0 LIMIT 10
-- case: ordinary 99: SELECT c.first_name, c.last_name, c.signup_date FROM customers c ORDER
SELECT c.first_name, c.last_name, c.signup_date FROM customers c ORDER BY c.signup_date DESC FETCH FIRST 10 ROWS ONLY
-- case: ordinary 100: SELECT c.first_name FROM customers c ORDER BY c.customer_id OFFSET 10 
SELECT c.first_name FROM customers c ORDER BY c.customer_id OFFSET 10 LIMIT 10
-- case: ordinary 101: SELECT COUNT(*) AS n FROM Customers C WHERE C.Is_Active
SELECT COUNT(*) AS n FROM Customers C WHERE C.Is_Active
-- case: ordinary 102: SELECT "first_name" FROM "customers" WHERE "segment" = 'Enterprise' LI
SELECT "first_name" FROM "customers" WHERE "segment" = 'Enterprise' LIMIT 3
-- case: ordinary 103: SELECT upper(left(last_name, 1)) AS initial, count(*) FROM employees G
SELECT upper(left(last_name, 1)) AS initial, count(*) FROM employees GROUP BY 1 ORDER BY 1
-- case: ordinary 104: SELECT e.department, e.job_title, count(*) FROM employees e GROUP BY e
SELECT e.department, e.job_title, count(*) FROM employees e GROUP BY e.department, e.job_title ORDER BY 1, 2
-- case: ordinary 105: SELECT e.first_name, row_number() OVER (PARTITION BY e.department ORDE
SELECT e.first_name, row_number() OVER (PARTITION BY e.department ORDER BY e.hire_date) AS seniority FROM employees e
-- case: ordinary 106: SELECT e.first_name, dense_rank() OVER (ORDER BY e.hire_date) FROM emp
SELECT e.first_name, dense_rank() OVER (ORDER BY e.hire_date) FROM employees e
-- case: ordinary 107: SELECT first_value(first_name) OVER (PARTITION BY department ORDER BY 
SELECT first_value(first_name) OVER (PARTITION BY department ORDER BY hire_date) AS first_hire, department FROM employees
-- case: ordinary 108: SELECT department, count(*) AS n FROM employees GROUP BY department OR
SELECT department, count(*) AS n FROM employees GROUP BY department ORDER BY n DESC
-- case: ordinary 109: SELECT c.customer_id, o.order_id FROM customers c FULL OUTER JOIN orde
SELECT c.customer_id, o.order_id FROM customers c FULL OUTER JOIN orders o ON o.customer_id = c.customer_id LIMIT 5
-- case: ordinary 110: SELECT c.region_id, c.segment, count(*) FROM customers c GROUP BY 1, 2
SELECT c.region_id, c.segment, count(*) FROM customers c GROUP BY 1, 2 ORDER BY 3 DESC
-- case: ordinary 111: SELECT concat(first_name, ' ', last_name) AS full_name FROM customers 
SELECT concat(first_name, ' ', last_name) AS full_name FROM customers LIMIT 10
-- case: ordinary 112: SELECT concat_ws(', ', city, country) AS location, count(*) FROM custo
SELECT concat_ws(', ', city, country) AS location, count(*) FROM customers GROUP BY 1 ORDER BY 2 DESC LIMIT 10
-- case: ordinary 113: SELECT format('%s %s', first_name, last_name) FROM employees
SELECT format('%s %s', first_name, last_name) FROM employees
-- case: ordinary 114: SELECT md5(customer_id::text) FROM customers LIMIT 3
SELECT md5(customer_id::text) FROM customers LIMIT 3
-- case: ordinary 115: SELECT s.customer_id, s.n FROM (SELECT customer_id, count(*) AS n FROM
SELECT s.customer_id, s.n FROM (SELECT customer_id, count(*) AS n FROM orders GROUP BY customer_id) AS s WHERE s.n > 10
-- case: ordinary 116: SELECT t.n FROM (SELECT count(*) FROM customers) AS t(n)
SELECT t.n FROM (SELECT count(*) FROM customers) AS t(n)
-- case: ordinary 117: SELECT v.label, v.lo FROM (VALUES ('small', 0), ('large', 1000)) AS v(
SELECT v.label, v.lo FROM (VALUES ('small', 0), ('large', 1000)) AS v(label, lo)
-- case: ordinary 118: SELECT c.customer_id, c.is_active::int FROM customers c LIMIT 3
SELECT c.customer_id, c.is_active::int FROM customers c LIMIT 3
-- case: ordinary 119: SELECT p.sku, p.name FROM products p WHERE p.name ILIKE '%pro%' AND p.
SELECT p.sku, p.name FROM products p WHERE p.name ILIKE '%pro%' AND p.list_price > 100
-- case: ordinary 120: SELECT avg(list_price)::numeric(10,2) FROM products
SELECT avg(list_price)::numeric(10,2) FROM products
-- case: ordinary 121: SELECT c.customer_id FROM customers c JOIN orders o ON o.customer_id =
SELECT c.customer_id FROM customers c JOIN orders o ON o.customer_id = c.customer_id AND o.status = 'cancelled' GROUP BY c.customer_id HAVING count(*) >= 3
-- case: ordinary 122: SELECT c.first_name, c.last_name FROM customers c WHERE c.account_mana
SELECT c.first_name, c.last_name FROM customers c WHERE c.account_manager_id IS NULL LIMIT 5
-- case: ordinary 123: SELECT employee_id FROM employees WHERE region_id IS NULL
SELECT employee_id FROM employees WHERE region_id IS NULL
-- case: ordinary 124: SELECT e.first_name AS name, e.department FROM employees e ORDER BY na
SELECT e.first_name AS name, e.department FROM employees e ORDER BY name
-- case: ordinary 125: SELECT e.first_name AS name FROM employees e GROUP BY name
SELECT e.first_name AS name FROM employees e GROUP BY name
-- case: ordinary 126: SELECT c.first_name AS customer, count(o.order_id) AS orders FROM cust
SELECT c.first_name AS customer, count(o.order_id) AS orders FROM customers c JOIN orders o USING (customer_id) GROUP BY customer ORDER BY orders DESC LIMIT 10
-- case: ordinary 127: SELECT count(*) AS customers FROM customers ORDER BY customers
SELECT count(*) AS customers FROM customers ORDER BY customers
-- case: ordinary 128: SELECT date_trunc('month', c.signup_date) AS month, count(*) AS signup
SELECT date_trunc('month', c.signup_date) AS month, count(*) AS signups FROM customers c GROUP BY month ORDER BY month
-- case: ordinary 129: SELECT e.department AS dept, count(*) FROM employees e GROUP BY dept H
SELECT e.department AS dept, count(*) FROM employees e GROUP BY dept HAVING count(*) > 2 ORDER BY dept
-- case: ordinary 130: EXPLAIN SELECT count(*) FROM orders o JOIN customers c USING (customer
EXPLAIN SELECT count(*) FROM orders o JOIN customers c USING (customer_id)
-- case: ordinary 131: SELECT o.order_id, o.total_amount FROM orders o WHERE o.total_amount >
SELECT o.order_id, o.total_amount FROM orders o WHERE o.total_amount > (SELECT avg(total_amount) FROM orders) LIMIT 10
-- case: ordinary 132: SELECT c.customer_id FROM customers c WHERE c.customer_id = ANY (ARRAY
SELECT c.customer_id FROM customers c WHERE c.customer_id = ANY (ARRAY[1, 2, 3])
-- case: ordinary 133: SELECT r.name FROM regions r WHERE r.region_id IN (SELECT region_id FR
SELECT r.name FROM regions r WHERE r.region_id IN (SELECT region_id FROM employees WHERE department = 'Sales')
-- case: ordinary 134: SELECT e.first_name, (SELECT r.name FROM regions r WHERE r.region_id =
SELECT e.first_name, (SELECT r.name FROM regions r WHERE r.region_id = e.region_id) AS region FROM employees e
-- case: ordinary 135: SELECT c.segment, avg(o.total_amount) FROM customers c, orders o WHERE
SELECT c.segment, avg(o.total_amount) FROM customers c, orders o WHERE o.customer_id = c.customer_id GROUP BY c.segment
-- case: ordinary 136: SELECT c.city FROM customers c TABLESAMPLE SYSTEM (10) LIMIT 5
SELECT c.city FROM customers c TABLESAMPLE SYSTEM (10) LIMIT 5
-- case: ordinary 137: SELECT DISTINCT c.country FROM customers c ORDER BY c.country
SELECT DISTINCT c.country FROM customers c ORDER BY c.country
-- case: ordinary 138: SELECT count(DISTINCT customer_id) FROM events WHERE event_type = 'sig
SELECT count(DISTINCT customer_id) FROM events WHERE event_type = 'signup'
-- case: ordinary 139: SELECT o.order_id, p.status FROM orders o LEFT JOIN LATERAL (SELECT st
SELECT o.order_id, p.status FROM orders o LEFT JOIN LATERAL (SELECT status FROM payments WHERE order_id = o.order_id ORDER BY paid_at DESC LIMIT 1) p ON true LIMIT 10
-- case: ordinary 140: SELECT customers.first_name, orders.total_amount FROM customers, order
SELECT customers.first_name, orders.total_amount FROM customers, orders WHERE orders.customer_id = customers.customer_id LIMIT 5
-- case: ordinary 141: SELECT c.* FROM categories c
SELECT c.* FROM categories c
-- case: ordinary 142: SELECT * FROM regions
SELECT * FROM regions
-- case: ordinary 143: SELECT * FROM orders LIMIT 5
SELECT * FROM orders LIMIT 5
-- case: ordinary 144: SELECT e.employee_id, e.first_name FROM employees e WHERE e.first_name
SELECT e.employee_id, e.first_name FROM employees e WHERE e.first_name LIKE 'A%' ORDER BY e.first_name COLLATE "C"
-- case: ordinary 145: SELECT c.customer_id, c.first_name FROM customers AS c WHERE c.signup_
SELECT c.customer_id, c.first_name FROM customers AS c WHERE c.signup_date > now() - interval '2 years' LIMIT 5
-- case: ordinary 146: SELECT jsonb_object_agg(code, name) FROM regions
SELECT jsonb_object_agg(code, name) FROM regions
-- case: ordinary 147: SELECT e.first_name, e.last_name, e.job_title FROM employees e JOIN em
SELECT e.first_name, e.last_name, e.job_title FROM employees e JOIN employees m ON m.employee_id = e.manager_id WHERE m.job_title ILIKE 'vice president%'
-- case: ordinary 148: WITH RECURSIVE sub AS (SELECT employee_id FROM employees WHERE employe
WITH RECURSIVE sub AS (SELECT employee_id FROM employees WHERE employee_id = 1 UNION ALL SELECT e.employee_id FROM employees e JOIN sub s ON e.manager_id = s.employee_id) SELECT count(*) FROM sub
-- case: ordinary 149: SELECT a.customer_id, b.customer_id FROM customers a JOIN customers b 
SELECT a.customer_id, b.customer_id FROM customers a JOIN customers b ON a.city = b.city AND a.customer_id < b.customer_id LIMIT 5
-- case: ordinary 150: SELECT count(*) FROM events WHERE payload ? 'page'
SELECT count(*) FROM events WHERE payload ? 'page'
-- case: ordinary 151: SELECT count(*) FROM events WHERE payload @> '{"page": "/"}'
SELECT count(*) FROM events WHERE payload @> '{"page": "/"}'
-- case: ordinary 152: SELECT payload #>> '{page}' FROM events LIMIT 3
SELECT payload #>> '{page}' FROM events LIMIT 3
-- case: ordinary 153: SELECT event_id FROM events WHERE jsonb_path_exists(payload, '$.page')
SELECT event_id FROM events WHERE jsonb_path_exists(payload, '$.page') LIMIT 3
-- case: ordinary 154: SELECT total_amount FROM orders ORDER BY total_amount DESC FETCH FIRST
SELECT total_amount FROM orders ORDER BY total_amount DESC FETCH FIRST 5 ROWS WITH TIES
-- case: ordinary 155: SELECT channel, GROUPING(channel), count(*) FROM orders GROUP BY ROLLU
SELECT channel, GROUPING(channel), count(*) FROM orders GROUP BY ROLLUP (channel)
-- case: ordinary 156: WITH RECURSIVE chain AS (SELECT employee_id, manager_id FROM employees
WITH RECURSIVE chain AS (SELECT employee_id, manager_id FROM employees WHERE manager_id IS NULL UNION ALL SELECT e.employee_id, e.manager_id FROM employees e JOIN chain c ON e.manager_id = c.employee_id) SEARCH DEPTH FIRST BY employee_id SET ord SELECT employee_id FROM chain ORDER BY ord
-- case: ordinary 157: WITH RECURSIVE chain AS (SELECT employee_id, manager_id FROM employees
WITH RECURSIVE chain AS (SELECT employee_id, manager_id FROM employees WHERE manager_id IS NULL UNION ALL SELECT e.employee_id, e.manager_id FROM employees e JOIN chain c ON e.manager_id = c.employee_id) CYCLE employee_id SET is_cycle USING path SELECT count(*) FROM chain
-- case: ordinary 158: WITH x AS MATERIALIZED (SELECT customer_id FROM customers) SELECT coun
WITH x AS MATERIALIZED (SELECT customer_id FROM customers) SELECT count(*) FROM x
-- case: ordinary 159: SELECT o.ordered_at AT TIME ZONE 'UTC' FROM orders o LIMIT 2
SELECT o.ordered_at AT TIME ZONE 'UTC' FROM orders o LIMIT 2
-- case: ordinary 160: SELECT count(*) FROM orders WHERE (ordered_at, ordered_at + interval '
SELECT count(*) FROM orders WHERE (ordered_at, ordered_at + interval '1 day') OVERLAPS (TIMESTAMP '2024-01-01', TIMESTAMP '2024-02-01')
-- case: ordinary 161: SELECT e.first_name FROM employees e WHERE e.first_name SIMILAR TO 'A%
SELECT e.first_name FROM employees e WHERE e.first_name SIMILAR TO 'A%'
-- case: ordinary 162: SELECT c.first_name FROM customers c WHERE c.first_name LIKE ANY (ARRA
SELECT c.first_name FROM customers c WHERE c.first_name LIKE ANY (ARRAY['A%', 'B%'])
-- case: ordinary 163: SELECT c.customer_id, c.first_name FROM customers c WHERE (c.city, c.c
SELECT c.customer_id, c.first_name FROM customers c WHERE (c.city, c.country) IN (SELECT city, country FROM customers GROUP BY 1, 2 HAVING count(*) > 50) LIMIT 5
-- case: ordinary 164: SELECT e.department, count(*) FILTER (WHERE e.hire_date >= '2022-01-01
SELECT e.department, count(*) FILTER (WHERE e.hire_date >= '2022-01-01') FROM employees e GROUP BY ROLLUP (e.department)
-- case: ordinary 165: SELECT c.customer_id FROM customers c WHERE c.customer_id NOT IN (SELE
SELECT c.customer_id FROM customers c WHERE c.customer_id NOT IN (SELECT customer_id FROM orders) LIMIT 5
-- case: ordinary 166: SELECT e.* FROM (SELECT employee_id, first_name FROM employees) e
SELECT e.* FROM (SELECT employee_id, first_name FROM employees) e
-- case: ordinary 167: SELECT x.* FROM employees e JOIN LATERAL (SELECT e.first_name, e.last_
SELECT x.* FROM employees e JOIN LATERAL (SELECT e.first_name, e.last_name) x ON true LIMIT 3
-- case: ordinary 168: SELECT trim(both ' ' FROM c.city) FROM customers c LIMIT 3
SELECT trim(both ' ' FROM c.city) FROM customers c LIMIT 3
-- case: ordinary 169: SELECT substring(c.last_name from 1 for 3) FROM customers c LIMIT 3
SELECT substring(c.last_name from 1 for 3) FROM customers c LIMIT 3
-- case: ordinary 170: SELECT c.first_name, o.cnt FROM customers c JOIN (SELECT customer_id, 
SELECT c.first_name, o.cnt FROM customers c JOIN (SELECT customer_id, count(*) cnt FROM orders GROUP BY customer_id) o ON o.customer_id = c.customer_id ORDER BY o.cnt DESC LIMIT 3
-- case: ordinary 171: SELECT date_trunc('quarter', o.ordered_at) q, c.segment, sum(o.total_a
SELECT date_trunc('quarter', o.ordered_at) q, c.segment, sum(o.total_amount) FROM orders o JOIN customers c ON c.customer_id = o.customer_id GROUP BY q, c.segment ORDER BY q, c.segment
-- case: ordinary 172: SELECT e.first_name, e.last_name, count(DISTINCT o.customer_id) FROM e
SELECT e.first_name, e.last_name, count(DISTINCT o.customer_id) FROM employees e JOIN orders o ON o.sales_rep_id = e.employee_id GROUP BY 1, 2
-- case: ordinary 173: SELECT employees.department, count(employees.employee_id) FROM employe
SELECT employees.department, count(employees.employee_id) FROM employees GROUP BY employees.department
-- case: ordinary 174: SELECT count(*) FILTER (WHERE c.is_active) * 100.0 / count(*) FROM cus
SELECT count(*) FILTER (WHERE c.is_active) * 100.0 / count(*) FROM customers c
-- case: ordinary 175: SELECT c.first_name || ' ' || c.last_name AS name FROM customers c ORD
SELECT c.first_name || ' ' || c.last_name AS name FROM customers c ORDER BY name LIMIT 5
-- case: ordinary 176: SELECT count(*) FROM employees NATURAL JOIN (VALUES (1, 'x')) AS v(a)
SELECT count(*) FROM employees NATURAL JOIN (VALUES (1, 'x')) AS v(a)
-- case: ordinary 177: SELECT count(*) FROM employees NATURAL JOIN (SELECT 1 AS department_co
SELECT count(*) FROM employees NATURAL JOIN (SELECT 1 AS department_code) AS d
-- case: ordinary 178: SELECT r.name, count(*) FROM customers c NATURAL JOIN (SELECT region_i
SELECT r.name, count(*) FROM customers c NATURAL JOIN (SELECT region_id, name FROM regions) r GROUP BY r.name
-- case: ordinary 179: SELECT count(*) FROM (SELECT customer_id, segment FROM customers) c NA
SELECT count(*) FROM (SELECT customer_id, segment FROM customers) c NATURAL JOIN (SELECT customer_id, order_id FROM orders) o
-- case: ordinary 180: WITH t AS (SELECT x AS n FROM (SELECT 1 AS x) s) SELECT count(*) FROM 
WITH t AS (SELECT x AS n FROM (SELECT 1 AS x) s) SELECT count(*) FROM employees NATURAL JOIN t AS u(m)
-- case: row type of a table without hidden columns
SELECT * FROM jsonb_populate_record(NULL::regions, '{"code": "NA"}')
-- case: ordinary casts
SELECT o.ordered_at::date, o.total_amount::numeric(12, 2), CAST(o.order_id AS text) FROM orders o LIMIT 3
