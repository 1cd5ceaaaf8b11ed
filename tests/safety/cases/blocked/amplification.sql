-- case: repeat with a huge count (issue 10)
-- expect: value_too_large
SELECT md5(repeat('ab', 600000000))
-- case: rpad to 300 MB
-- expect: value_too_large
SELECT rpad('', 300000000, '-')
-- case: lpad with a huge length
-- expect: value_too_large
SELECT lpad(name, 2147483647, 'x') FROM customers
-- case: array_fill with a huge dimension
-- expect: value_too_large
SELECT array_fill(0, ARRAY[90000000])
-- case: array_fill with dimensions that multiply
-- expect: value_too_large
SELECT cardinality(array_fill(0, ARRAY[10000, 10000]))
-- case: array_fill with a text dimension literal
-- expect: value_too_large
SELECT array_fill(1, '{90000000}'::int[])
-- case: string_agg of a column repeated by a constant
-- expect: value_too_large
SELECT string_agg(repeat(name, 2000000), ';') FROM customers
-- case: aggregate of a moderate repeat once per row
-- expect: value_too_large
SELECT length(string_agg(repeat(c.name, 50000), ',')) FROM customers c
-- case: array_agg of padded values
-- expect: value_too_large
SELECT array_agg(lpad(city, 1000000)) FROM customers
-- case: nested repeat multiplies
-- expect: value_too_large
SELECT repeat(repeat('a', 1000), 1000)
-- case: count folded from arithmetic
-- expect: value_too_large
SELECT repeat('a', 600000 * 1000)
-- case: count folded from power
-- expect: value_too_large
SELECT repeat('a', (10 ^ 9)::int)
-- case: count given as a text literal cast
-- expect: value_too_large
SELECT repeat('x', '200000000'::int)
-- case: count from a constant scalar subquery
-- expect: value_too_large
SELECT repeat('x', (SELECT 200000000))
-- case: amplification through concatenation
-- expect: value_too_large
SELECT repeat('ab' || repeat('c', 100), 100000)
-- case: amplification through a cast to char(n)
-- expect: value_too_large
SELECT repeat(''::char(10000), 1000)
-- case: amplification through concat()
-- expect: value_too_large
SELECT repeat(concat('a', 'b', 'c'), 50000000)
-- case: format width
-- expect: value_too_large
SELECT format('%1000000000s', '')
-- case: format width from an argument
-- expect: value_too_large
SELECT format('%*s', 500000000, 'x')
-- case: format positional width
-- expect: value_too_large
SELECT format('%1$-300000000s|', 'x')
-- case: encode of an amplified value
-- expect: value_too_large
SELECT encode(decode(repeat('00', 50000000), 'hex'), 'base64')
-- case: amplification in a where clause
-- expect: value_too_large
SELECT count(*) FROM orders WHERE status < repeat('z', 500000000)
-- case: amplification hidden in a CTE
-- expect: value_too_large
WITH big AS (SELECT rpad('x', 100000000, 'y') AS v) SELECT length(v) FROM big
-- case: amplification in a lateral subquery
-- expect: value_too_large
SELECT c.name, s.v FROM customers c CROSS JOIN LATERAL (SELECT repeat(c.city, 300000) AS v) s
-- case: amplification in a case branch
-- expect: value_too_large
SELECT CASE WHEN customer_id > 0 THEN repeat('x', 999999999) END FROM customers
-- case: limit policy lowered
-- expect: value_too_large
-- policy: {"max_value_bytes": 10}
SELECT repeat('-', 20)
-- case: two generate_series multiply
-- expect: generate_series_too_large
SELECT count(*) FROM generate_series(1, 1000000) a, generate_series(1, 1000000) b
-- case: generate_series in select list over generate_series in from
-- expect: generate_series_too_large
SELECT generate_series(1, 100000) FROM generate_series(1, 100000) g
-- case: generate_series bound folded from arithmetic
-- expect: generate_series_too_large
SELECT count(*) FROM generate_series(1, 100000 * 100000)
-- case: array_agg over a huge folded generate_series
-- expect: generate_series_too_large
SELECT array_agg(g) FROM generate_series(1, 2 ^ 40) g
-- case: cross join lateral generate_series huge
-- expect: generate_series_too_large
SELECT count(*) FROM orders o CROSS JOIN LATERAL generate_series(1, 5000000000) g
-- case: count from a scalar subquery over a table
-- expect: value_too_large
SELECT repeat('x', (SELECT 999999999 FROM orders LIMIT 1))
-- case: count from length of a folded text
-- expect: value_too_large
SELECT repeat('x', length(repeat('y', 1000)) * 1000000)
-- case: count through abs and unary signs
-- expect: value_too_large
SELECT repeat('x', abs(-1000000000)), repeat('y', +1000000000)
-- case: delimiter of string_agg amplified once per row
-- expect: value_too_large
SELECT string_agg(city, repeat(',', 50000)) FROM customers
