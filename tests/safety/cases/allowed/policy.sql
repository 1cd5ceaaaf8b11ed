-- case: allowed catalog by policy
-- policy: {"allowed_catalogs": ["pg_stat_activity"]}
SELECT state, count(*) FROM pg_stat_activity GROUP BY state
-- case: extra function by policy
-- policy: {"extra_functions": ["my_pure_fn"]}
SELECT my_pure_fn(amount) FROM orders
-- case: extra schema-qualified function by policy
-- policy: {"extra_functions": ["analytics.fiscal_quarter"]}
SELECT analytics.fiscal_quarter(created_at) FROM orders
-- case: cartesian allowed by policy
-- policy: {"allow_cartesian": true}
SELECT * FROM a, b
-- case: hidden column not referenced
-- policy: {"hidden_columns": ["customers.ssn"], "hidden_tables": ["salaries"]}
SELECT c.id, c.name, count(o.id) FROM customers c LEFT JOIN orders o ON o.customer_id = c.id GROUP BY c.id, c.name
-- case: star over a table without hidden columns next to one with them in exists
-- policy: {"hidden_columns": ["customers.ssn"]}
SELECT c.name FROM customers c WHERE EXISTS (SELECT * FROM orders o WHERE o.customer_id = c.id)
-- case: count star over a table with hidden columns
-- policy: {"hidden_columns": ["customers.ssn"]}
SELECT count(*) FROM customers
