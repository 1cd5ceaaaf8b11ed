-- case: issue: nested replace multiplies a repeated value
-- expect: value_too_large
SELECT length(replace(replace(repeat('a', 99000), 'a', repeat('b', 1000)), 'b', repeat('c', 100)))
-- case: issue: regexp_replace with a large replacement, global
-- expect: value_too_large
SELECT regexp_replace(repeat('a',99000),'a',repeat('b',99000),'g')
-- case: issue: lpad to a length counted from a table
-- expect: value_too_large
SELECT lpad('', (SELECT count(*)::int FROM order_items) * 15000, 'ab')
-- case: issue: array_fill with a dimension counted from a table
-- expect: value_too_large
SELECT array_fill(1, ARRAY[(SELECT count(*)::int FROM order_items) * 2000])
-- case: issue: repeat with a count read from table data
-- expect: value_too_large
SELECT repeat('x', (SELECT max(order_id) FROM orders) * 45000)
-- case: issue: jsonpath like_regex built from table data
-- expect: regex_not_constant
SELECT count(*) FROM events WHERE payload @? ('$.a ? (@ like_regex "' || (SELECT first_name FROM customers LIMIT 1) || '")')::jsonpath
-- case: jsonpath from a column in jsonb_path_exists
-- expect: regex_not_constant
SELECT jsonb_path_exists(payload, ('$ ? (@ like_regex "' || e.event_type || '")')::jsonpath) FROM events e
-- case: jsonpath like_regex with a backreference behind a cast to jsonpath
-- expect: regex_too_costly
SELECT count(*) FROM events WHERE payload @? '$.a ? (@ like_regex "^(b+)\\1$")'::jsonpath
-- case: issue: cross join of unnest over constant arrays
-- expect: rows_too_large
SELECT count(*) FROM unnest(array_fill(1, ARRAY[100000])) a, unnest(array_fill(1, ARRAY[100000])) b
-- case: issue: cross join of string_to_table over constant strings
-- expect: rows_too_large
SELECT count(*) FROM string_to_table(repeat('a,', 49000), ',') a, string_to_table(repeat('a,', 49000), ',') b
-- case: cross join of regexp_split_to_table and unnest through a CTE
-- expect: rows_too_large
WITH a AS (SELECT regexp_split_to_table(repeat('x ', 40000), ' ') AS v) SELECT count(*) FROM a, unnest(array_fill(0, ARRAY[50000])) b
-- case: three unnests joined on true
-- expect: rows_too_large
SELECT count(*) FROM unnest(array_fill(1, ARRAY[1000])) a JOIN unnest(array_fill(1, ARRAY[1000])) b ON true JOIN unnest(array_fill(1, ARRAY[1000])) c ON true
-- case: set-returning function in the target list over another in FROM
-- expect: rows_too_large
SELECT unnest(array_fill(1, ARRAY[50000])) FROM string_to_table(repeat('a,', 50000), ',')
-- case: jsonb_array_elements over a constant document crossed with itself
-- expect: rows_too_large
SELECT count(*) FROM jsonb_array_elements(('[' || repeat('1,', 40000) || '1]')::jsonb) a, jsonb_array_elements(('[' || repeat('1,', 40000) || '1]')::jsonb) b
-- case: issue: recursive CTE bounded by a WHERE that never stops it
-- expect: unbounded_recursion
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n > 0) SELECT count(*) FROM r
-- case: recursive counter going the wrong way
-- expect: unbounded_recursion
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n - 1 FROM r WHERE n < 100) SELECT count(*) FROM r
-- case: recursive counter with a huge stop
-- expect: unbounded_recursion
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 1000000000) SELECT count(*) FROM r
-- case: recursive counter stopped only inside an OR
-- expect: unbounded_recursion
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 100 OR true) SELECT count(*) FROM r
-- case: recursive counter that fans out through a set-returning function
-- expect: unbounded_recursion
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 + 0 * generate_series(1, 10) FROM r WHERE n < 50) SELECT count(*) FROM r
-- case: recursive counter crossed with a table
-- expect: unbounded_recursion
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r, orders WHERE n < 5) SELECT count(*) FROM r
-- case: recursive join on a condition that does not involve the table
-- expect: unbounded_recursion
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT r.n + 1 FROM r JOIN employees e ON e.employee_id = e.employee_id) SELECT count(*) FROM r
-- case: walk over a derived table that crosses its table with a series
-- expect: unbounded_recursion
WITH RECURSIVE chain AS (SELECT employee_id, 1 AS depth FROM employees WHERE manager_id IS NULL UNION ALL SELECT e.employee_id, c.depth + 1 FROM (SELECT x.* FROM employees x, generate_series(1, 1000) g) e JOIN chain c ON e.manager_id = c.employee_id) SELECT depth, count(*) FROM chain GROUP BY depth
-- case: walk over a derived table whose targets fan out
-- expect: unbounded_recursion
WITH RECURSIVE chain AS (SELECT employee_id, 1 AS depth FROM employees WHERE manager_id IS NULL UNION ALL SELECT e.employee_id, c.depth + 1 FROM (SELECT employee_id, manager_id, generate_series(1, 1000) AS g FROM employees) e JOIN chain c ON e.manager_id = c.employee_id) SELECT depth, count(*) FROM chain GROUP BY depth
-- case: walk over a derived table that is a set operation
-- expect: unbounded_recursion
WITH RECURSIVE chain AS (SELECT employee_id, 1 AS depth FROM employees WHERE manager_id IS NULL UNION ALL SELECT e.employee_id, c.depth + 1 FROM (SELECT employee_id, manager_id FROM employees UNION ALL SELECT employee_id, manager_id FROM employees) e JOIN chain c ON e.manager_id = c.employee_id) SELECT depth, count(*) FROM chain GROUP BY depth
-- case: walk over a derived table with a WITH of its own
-- expect: unbounded_recursion
WITH RECURSIVE chain AS (SELECT employee_id, 1 AS depth FROM employees WHERE manager_id IS NULL UNION ALL SELECT e.employee_id, c.depth + 1 FROM (WITH x AS (SELECT y.employee_id, y.manager_id FROM employees y, generate_series(1, 1000) g) SELECT * FROM x) e JOIN chain c ON e.manager_id = c.employee_id) SELECT depth, count(*) FROM chain GROUP BY depth
-- case: walk over a derived table of VALUES
-- expect: unbounded_recursion
WITH RECURSIVE chain AS (SELECT employee_id, 1 AS depth FROM employees WHERE manager_id IS NULL UNION ALL SELECT e.employee_id, c.depth + 1 FROM (VALUES (1, 2), (2, 1)) e(employee_id, manager_id) JOIN chain c ON e.manager_id = c.employee_id) SELECT depth, count(*) FROM chain GROUP BY depth
-- case: walk over a derived table of a join
-- expect: unbounded_recursion
WITH RECURSIVE chain AS (SELECT employee_id, 1 AS depth FROM employees WHERE manager_id IS NULL UNION ALL SELECT e.employee_id, c.depth + 1 FROM (SELECT x.employee_id, y.manager_id FROM employees x JOIN employees y ON true) e JOIN chain c ON e.manager_id = c.employee_id) SELECT depth, count(*) FROM chain GROUP BY depth
-- case: recursive CTE with only a CYCLE clause over a counter
-- expect: unbounded_recursion
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) CYCLE n SET c USING p SELECT count(*) FROM r
-- case: LIMIT outside that cannot stop it: an aggregate needs every row
-- expect: unbounded_recursion
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r LIMIT 1
-- case: LIMIT outside that cannot stop it: ORDER BY needs every row
-- expect: unbounded_recursion
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r ORDER BY n LIMIT 1
-- case: LIMIT outside that cannot stop it: a WHERE no row passes
-- expect: unbounded_recursion
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r WHERE n < 0 LIMIT 1
-- case: LIMIT outside while another reader of the CTE needs every row
-- expect: unbounded_recursion
WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n, (SELECT count(*) FROM r) FROM r LIMIT 1
-- case: issue: factorial of a large constant
-- expect: value_too_large
SELECT factorial(200000)
-- case: factorial of a count from a table
-- expect: value_too_large
SELECT factorial((SELECT count(*) FROM order_items))
-- case: issue: numeric power with a large exponent
-- expect: value_too_large
SELECT 9.9::numeric ^ 1000000
-- case: numeric power through power()
-- expect: value_too_large
SELECT power(9.9::numeric, 1000000)
-- case: numeric power through the qualified operator
-- expect: value_too_large
SELECT 9.9::numeric OPERATOR(pg_catalog.^) 1000000
-- case: power with an exponent read from a table
-- expect: value_too_large
SELECT 9.9::numeric ^ (SELECT max(order_id) FROM orders)
-- case: issue: pg_trgm similarity through the % operator
-- expect: function_not_allowed
SELECT 'abc' % 'abd'
-- case: % between two columns may be pg_trgm
-- expect: function_not_allowed
SELECT count(*) FROM customers a JOIN customers b ON a.city % b.city
-- case: pg_trgm word similarity operator
-- expect: function_not_allowed
SELECT 'abc' <% 'abcdef'
-- case: pg_trgm distance operator
-- expect: function_not_allowed
SELECT first_name <-> 'Anna' FROM customers ORDER BY 1 LIMIT 5
-- case: an extension's operator qualified with its schema
-- expect: function_not_allowed
SELECT 'abc' OPERATOR(public.%) 'abd'
-- case: a qualified operator that core does not define
-- expect: function_not_allowed
SELECT 1 OPERATOR(pg_catalog.<%) 2
-- case: operator in ANY form
-- expect: function_not_allowed
SELECT 'abc' % ANY (ARRAY['abd'])
-- case: concatenation doubling through nested CTEs
-- expect: value_too_large
WITH a AS (SELECT repeat('x', 50000) AS v), b AS (SELECT v || v AS v FROM a), c AS (SELECT v || v AS v FROM b) SELECT length(v) FROM c
-- case: concatenation of large values in a subquery
-- expect: value_too_large
SELECT length(s.v || s.v || s.v) FROM (SELECT repeat('ab', 40000) AS v) s
-- case: amplification in a CASE arm with a table count
-- expect: value_too_large
SELECT CASE WHEN true THEN repeat('x', (SELECT count(*)::int FROM order_items) * 1000) END
-- case: count hidden behind a cast and COALESCE
-- expect: value_too_large
SELECT rpad('', COALESCE((SELECT sum(quantity) FROM order_items), 0)::int, 'x')
-- case: count capped on one side only by GREATEST
-- expect: value_too_large
SELECT repeat('x', GREATEST((SELECT count(*)::int FROM order_items), 10) * 100000)
-- case: product of two LEAST caps that may both be negative
-- expect: value_too_large
SELECT repeat('x', LEAST((SELECT min(order_id) - 10000000 FROM orders), 10) * LEAST((SELECT min(order_id) - 10000000 FROM orders), 10))
-- case: repeat of a column with a count from a LATERAL subquery
-- expect: value_too_large
SELECT length(repeat(c.first_name, s.n)) FROM customers c CROSS JOIN LATERAL (SELECT count(*)::int * 100 AS n FROM orders o WHERE o.customer_id = c.customer_id) s
-- case: replace with a column replacement over a repeated value
-- expect: value_too_large
SELECT length(replace(repeat('a', 5000), 'a', c.first_name)) FROM customers c
-- case: translate over an amplified value
-- expect: value_too_large
SELECT length(translate(repeat('a', 90000), 'a', 'é'))
-- case: string_agg of a constant per row over a large series
-- expect: value_too_large
SELECT length(string_agg(repeat('x', 1000), '')) FROM generate_series(1, 1000000)
-- case: array_agg over a cross product of unnests
-- expect: value_too_large
SELECT cardinality(array_agg(a)) FROM unnest(array_fill(1, ARRAY[900])) a, unnest(array_fill(1, ARRAY[900])) b
-- case: string_agg over table rows of a large constant
-- expect: value_too_large
SELECT length(string_agg(repeat('x', 5000), '')) FROM order_items
-- case: string_agg over table rows of a repeated column
-- expect: value_too_large
SELECT length(string_agg(repeat(sku, 200), '')) FROM products CROSS JOIN LATERAL (SELECT 1) s
-- case: an aggregate over table rows fed back to repeat
-- expect: value_too_large
SELECT length(repeat((SELECT string_agg(first_name, ',') FROM customers), 1000))
-- case: aggregate of a whole-table aggregate once per row
-- expect: value_too_large
SELECT length(string_agg((SELECT string_agg(first_name, ',') FROM customers), ',')) FROM order_items
-- case: ARRAY subquery over a large series
-- expect: value_too_large
SELECT cardinality(ARRAY(SELECT repeat('x', 100) FROM generate_series(1, 1000000)))
-- case: json_agg of a repeated value per row
-- expect: value_too_large
SELECT length(json_agg(repeat('x', 4000))::text) FROM orders
-- case: window string_agg with a large constant
-- expect: value_too_large
SELECT length(string_agg(repeat('x', 2000), '') OVER (ORDER BY order_id)) FROM orders
-- case: normalize of an amplified value
-- expect: value_too_large
SELECT length(normalize(repeat('ﷺ', 30000), NFKD))
-- case: jsonb_pretty of a deeply nested constant document
-- expect: value_too_large
SELECT length(jsonb_pretty((repeat('[', 2000) || repeat(']', 2000))::jsonb))
-- case: format with a width counted from a table
-- expect: value_too_large
SELECT format('%*s', (SELECT count(*)::int FROM order_items) * 10000, 'x')
-- case: to_char with a huge format
-- expect: value_too_large
SELECT to_char(now(), repeat('TMMonth', 14000))
-- case: array_to_string with a large delimiter over a large array
-- expect: value_too_large
SELECT length(array_to_string(array_fill('a'::text, ARRAY[5000]), repeat('-', 1000)))
-- case: a stored value counted as assumed_value_bytes
-- expect: value_too_large
-- policy: {"assumed_value_bytes": 100000}
SELECT repeat(first_name, 2) FROM customers
-- case: constant part of an aggregate above max_aggregated_value_bytes
-- expect: value_too_large
-- policy: {"max_aggregated_value_bytes": 100}
SELECT string_agg(first_name || repeat('-', 200), ',') FROM customers
-- case: concatenation loop doubling a value each step of a counted recursion
-- expect: value_too_large
WITH RECURSIVE r(n, v) AS (SELECT 1, 'x'::text UNION ALL SELECT n + 1, v || v FROM r WHERE n < 40) SELECT max(length(v)) FROM r
-- case: concatenation loop growing by a large constant each step
-- expect: value_too_large
WITH RECURSIVE r(n, v) AS (SELECT 1, ''::text UNION ALL SELECT n + 1, v || repeat('x', 1000) FROM r WHERE n < 5000) SELECT max(length(v)) FROM r
-- case: path concatenation in a walk whose steps are not counted
-- expect: value_too_large
WITH RECURSIVE chain AS (SELECT employee_id, first_name::text AS path FROM employees WHERE manager_id IS NULL UNION ALL SELECT e.employee_id, c.path || repeat('/', 1000) || e.first_name FROM employees e JOIN chain c ON e.manager_id = c.employee_id) SELECT max(length(path)) FROM chain
