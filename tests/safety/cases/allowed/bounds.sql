-- case: small repeat (issue 10 twin)
SELECT repeat('-', 20)
-- case: repeat with a computed count (a bar chart)
SELECT name, repeat('#', (count(*) / 10)::int) FROM customers GROUP BY name
-- case: zero-padded ids
SELECT lpad(customer_id::text, 8, '0'), rpad(name, 30) FROM customers
-- case: small array_fill
SELECT array_fill(0, ARRAY[12])
-- case: format with small widths
SELECT format('%-20s|%10s', name, city) FROM customers
-- case: string_agg of a padded column
SELECT string_agg(lpad(city, 12), ', ') FROM customers
-- case: format with a positional argument
SELECT format('%1$s - %1$s', name) FROM customers
-- case: regex without backreferences
SELECT name FROM customers WHERE name ~ '^[A-Z][a-z]+( [A-Z][a-z]+)*$'
-- case: case-insensitive regex
SELECT name FROM customers WHERE email ~* '@example\.(com|org)$'
-- case: regexp_replace with a backreference in the replacement only
SELECT regexp_replace(phone, '(\d{3})(\d{4})', '\1-\2') FROM customers
-- case: regexp_match with escapes
SELECT regexp_match(email, '^([^@]+)@(.+)$') FROM customers
-- case: substring from a position
SELECT substring(name from 1 for 3), substring(name, 2) FROM customers
-- case: substring from a column position
SELECT substring(name from length(city)) FROM customers
-- case: substring with a pattern
SELECT substring(email from '@(.*)$') FROM customers
-- case: SIMILAR TO a constant
SELECT name FROM customers WHERE name SIMILAR TO '(A|B)%'
-- case: regex ANY of constants
SELECT name FROM customers WHERE name ~ ANY (ARRAY['^A', '^B'])
-- case: bounded repetition
SELECT name FROM customers WHERE phone ~ '^\+?[0-9]{1,3}([ -][0-9]{2,4}){2,4}$'
-- case: jsonpath like_regex without backreference
SELECT count(*) FROM events WHERE payload @? '$.page ? (@ like_regex "^/products/[0-9]+$")'
-- case: full text search with a column query
SELECT count(*) FROM products WHERE to_tsvector(name) @@ plainto_tsquery(name)
-- case: dynamic regex allowed by policy
-- policy: {"allow_dynamic_regex": true}
SELECT c.name FROM customers c JOIN products p ON c.name ~ p.name
-- case: like with a column pattern
SELECT c.name FROM customers c JOIN products p ON c.name LIKE p.name || '%'
-- case: equality join
SELECT o.order_id, c.name FROM orders o JOIN customers c ON c.customer_id = o.customer_id
-- case: equality join plus a one-sided filter in ON
SELECT o.order_id, c.name FROM orders o LEFT JOIN customers c ON c.customer_id = o.customer_id AND c.city = 'Paris'
-- case: range join with BETWEEN
SELECT o.order_id, p.payment_id FROM orders o JOIN payments p ON p.paid_at BETWEEN o.ordered_at AND o.ordered_at + interval '7 days'
-- case: range join with greater than
SELECT a.order_id, count(b.order_id) FROM orders a JOIN orders b ON b.ordered_at < a.ordered_at AND b.customer_id = a.customer_id GROUP BY a.order_id
-- case: self join excluding the same row
SELECT a.customer_id, b.customer_id FROM customers a JOIN customers b ON a.city = b.city AND a.customer_id <> b.customer_id
-- case: join by an OR of equalities
SELECT count(*) FROM orders o JOIN customers c ON c.customer_id = o.customer_id OR c.email = o.status
-- case: small generate_series
SELECT g FROM generate_series(1, 10) g
-- case: two small generate_series
SELECT a, b FROM generate_series(1, 100) a, generate_series(1, 100) b
-- case: generate_series with a step
SELECT g FROM generate_series(0, 1000, 5) g
-- case: calendar joined to orders
SELECT d::date, count(o.order_id) FROM generate_series(date '2024-01-01', date '2024-12-31', interval '1 day') d LEFT JOIN orders o ON o.ordered_at::date = d::date GROUP BY 1 ORDER BY 1
-- case: array_agg over a small generate_series
SELECT array_agg(g) FROM generate_series(1, 1000) g
-- case: join on a lateral subquery with ON true
SELECT c.name, l.last FROM customers c LEFT JOIN LATERAL (SELECT max(ordered_at) AS last FROM orders o WHERE o.customer_id = c.customer_id) l ON true
-- case: join to a one-row aggregate on true
SELECT o.order_id, o.total_amount / t.total FROM orders o JOIN (SELECT sum(total_amount) AS total FROM orders) t ON true
-- case: a series joined to a table by a predicate
SELECT g, count(o.order_id) FROM generate_series(1, 12) g LEFT JOIN orders o ON extract(month FROM o.ordered_at) = g GROUP BY g
-- case: an unaliased series linked by its function name
SELECT count(*) FROM orders o JOIN generate_series(1, 12) ON extract(month FROM o.ordered_at) = generate_series
-- case: a correlated unnest in FROM
SELECT o.order_id, x FROM orders o, unnest(ARRAY[o.order_id, o.customer_id]) AS u(x)
-- case: a correlated set-returning function joined on true
SELECT e.key FROM events ev CROSS JOIN LATERAL jsonb_each(ev.payload) AS e
