-- policy-default: {"hidden_columns": ["customers.email", "employees.salary", "employees.email"]}
-- case: column alias list renames hidden columns (issue 9)
-- expect: hidden_column
SELECT e.s, e.m FROM employees AS e(i, f, l, m, j, d, mg, r, h, s) ORDER BY s DESC LIMIT 3
-- case: column alias list as a filter oracle
-- expect: hidden_column
SELECT count(*) FROM employees AS e(i, f, l, m) WHERE m LIKE 'ana%'
-- case: column alias list as a cast error oracle
-- expect: hidden_column
SELECT x::int FROM customers AS c(a, b, cc, x)
-- case: column alias list of one name on a table with hidden columns
-- expect: hidden_column
SELECT k FROM customers c(k)
-- case: column alias list on a schema-qualified table
-- expect: hidden_column
SELECT q.d FROM "public"."customers" AS q(a, b, c, d)
-- case: join alias star
-- expect: hidden_column
SELECT j.* FROM (customers c JOIN regions r ON r.region_id = c.region_id) AS j
-- case: join alias to_jsonb
-- expect: hidden_column
SELECT to_jsonb(j) FROM (customers c JOIN regions r ON r.region_id = c.region_id) AS j
-- case: join alias row_to_json
-- expect: hidden_column
SELECT row_to_json(j) FROM (employees e JOIN regions r USING (region_id)) AS j
-- case: join alias bare whole row
-- expect: hidden_column
SELECT j FROM (customers c JOIN regions r ON r.region_id = c.region_id) AS j
-- case: join alias column
-- expect: hidden_column
SELECT j.email FROM (customers c JOIN regions r USING (region_id)) j
-- case: join alias with a column list
-- expect: hidden_column
SELECT j.x FROM (regions r JOIN employees e USING (region_id)) AS j(a, b, c, d, e, x)
-- case: nested join aliases
-- expect: hidden_column
SELECT k.* FROM ((orders o JOIN customers c USING (customer_id)) AS j JOIN regions r USING (region_id)) AS k
-- case: star over an unaliased parenthesized join
-- expect: hidden_column
SELECT * FROM (customers c JOIN regions r USING (region_id))
-- case: star over a join
-- expect: hidden_column
SELECT * FROM orders o JOIN customers c USING (customer_id)
-- case: TABLE of a table with hidden columns
-- expect: hidden_column
TABLE employees
-- case: whole row by table name
-- expect: hidden_column
SELECT customers FROM customers
-- case: whole row by alias
-- expect: hidden_column
SELECT c FROM customers c
-- case: whole row in a scalar subquery
-- expect: hidden_column
SELECT (SELECT c) FROM customers c
-- case: whole row cast to text
-- expect: hidden_column
SELECT c::text FROM customers c
-- case: whole row to_jsonb
-- expect: hidden_column
SELECT to_jsonb(e) FROM employees e
-- case: whole row through json_populate_record
-- expect: hidden_column
SELECT (json_populate_record(NULL::customers, row_to_json(c))).first_name FROM customers c
-- case: whole row in ROW
-- expect: hidden_column
SELECT ROW(c.*) FROM customers c
-- case: whole row in an array
-- expect: hidden_column
SELECT ARRAY[c] FROM customers c
-- case: whole row compared
-- expect: hidden_column
SELECT count(*) FROM customers c WHERE c IS NOT NULL
-- case: whole row ordered
-- expect: hidden_column
SELECT e.first_name FROM employees e ORDER BY e
-- case: whole row grouped
-- expect: hidden_column
SELECT count(*) FROM customers GROUP BY customers
-- case: distinct over a qualified star
-- expect: hidden_column
SELECT DISTINCT c.* FROM customers c
-- case: whole row into a set-returning function in FROM
-- expect: hidden_column
SELECT kv.value FROM customers c CROSS JOIN LATERAL jsonb_each_text(to_jsonb(c)) AS kv
-- case: whole row into jsonb_to_record
-- expect: hidden_column
SELECT r.email FROM customers c, jsonb_to_record(to_jsonb(c)) AS r(email text)
-- case: whole row in ROWS FROM
-- expect: hidden_column
SELECT * FROM customers c, ROWS FROM (jsonb_each(to_jsonb(c))) AS x
-- case: whole row in JSON_TABLE
-- expect: hidden_column
SELECT jt.e FROM customers c, JSON_TABLE(to_jsonb(c), '$' COLUMNS (e text PATH '$.email')) AS jt
-- case: whole row in format
-- expect: hidden_column
SELECT format('%s', e) FROM employees e
-- case: functional notation to_jsonb
-- expect: hidden_column
SELECT c.to_jsonb FROM customers c
-- case: functional notation row_to_json
-- expect: hidden_column
SELECT c.row_to_json FROM customers c
-- case: functional notation concat
-- expect: hidden_column
SELECT e.concat FROM employees e
-- case: functional notation quote_literal on the table name
-- expect: hidden_column
SELECT employees.quote_literal FROM employees
-- case: functional notation through field selection
-- expect: hidden_column
SELECT (c).to_json FROM customers c
-- case: composite field selection of a hidden column
-- expect: hidden_column
SELECT (c).email FROM customers c
-- case: composite field selection on a table name
-- expect: hidden_column
SELECT (employees).salary FROM employees
-- case: composite star
-- expect: hidden_column
SELECT (c).* FROM customers c
-- case: composite field of a join alias
-- expect: hidden_column
SELECT (j).salary FROM (employees e JOIN regions r USING (region_id)) j
-- case: quoted hidden column
-- expect: hidden_column
SELECT "email" FROM customers
-- case: upper-case unquoted hidden column
-- expect: hidden_column
SELECT EMAIL FROM CUSTOMERS
-- case: quoted upper-case hidden column and table
-- expect: hidden_column
SELECT c."EMAIL" FROM "Customers" c
-- case: mixed-case qualifier
-- expect: hidden_column
SELECT C.Salary FROM Employees C
-- case: unicode-escaped hidden column
-- expect: hidden_column
SELECT U&"\0065mail" FROM customers
-- case: schema-qualified table
-- expect: hidden_column
SELECT email FROM public.customers
-- case: quoted schema-qualified table
-- expect: hidden_column
SELECT c.email FROM "public"."customers" c
-- case: three-part column reference
-- expect: hidden_column
SELECT public.customers.email FROM public.customers
-- case: table name qualifier with a schema-qualified table
-- expect: hidden_column
SELECT customers.email FROM public.customers
-- case: same table under two aliases
-- expect: hidden_column
SELECT b.email FROM customers a JOIN customers b ON b.customer_id = a.customer_id
-- case: alias named like another table
-- expect: hidden_column
SELECT orders.salary FROM employees orders
-- case: unqualified name resolves outward from a subquery
-- expect: hidden_column
SELECT (SELECT email FROM orders LIMIT 1) FROM customers
-- case: unqualified name resolves outward past a sibling that has it
-- expect: hidden_column
SELECT (SELECT s.x FROM (SELECT 'a' AS email) d, (SELECT email AS x) s) FROM customers
-- case: unqualified name in a correlated exists
-- expect: hidden_column
SELECT r.name FROM regions r, employees WHERE EXISTS (SELECT 1 FROM orders WHERE salary > 100000)
-- case: nested aliases reusing a name
-- expect: hidden_column
SELECT o.order_id FROM orders o WHERE EXISTS (SELECT 1 FROM customers o2 JOIN customers o ON o.customer_id = o2.customer_id WHERE o.email LIKE 'a%')
-- case: cte named like the base table reads the base table
-- expect: hidden_column
WITH customers AS (SELECT email FROM customers) SELECT count(*) FROM customers
-- case: cte named like the base table with a star over the base table
-- expect: hidden_column
WITH customers AS (SELECT * FROM customers) SELECT first_name FROM customers
-- case: cte inside a subquery does not shadow the outer table
-- expect: hidden_column
SELECT email FROM customers WHERE EXISTS (WITH customers AS (SELECT 'x' AS email) SELECT 1 FROM customers)
-- case: quoted cte name differs from the lower-case table
-- expect: hidden_column
WITH "Customers" AS (SELECT 1 AS x) SELECT email FROM customers
-- case: later cte sees earlier, not the reverse
-- expect: hidden_column
-- policy: {"hidden_columns": ["b.customer_id"]}
WITH a AS (SELECT customer_id FROM b), b AS (SELECT 1 AS customer_id) SELECT 1 FROM a
-- case: recursive cte over a hidden column
-- expect: hidden_column
WITH RECURSIVE t AS (SELECT employee_id, salary FROM employees WHERE manager_id IS NULL UNION ALL SELECT e.employee_id, e.salary FROM employees e JOIN t ON e.manager_id = t.employee_id) SELECT employee_id FROM t
-- case: ROW constructor
-- expect: hidden_column
SELECT ROW(c.first_name, c.email) FROM customers c
-- case: array constructor
-- expect: hidden_column
SELECT ARRAY[first_name, email] FROM customers
-- case: array subquery
-- expect: hidden_column
SELECT ARRAY(SELECT email FROM customers)
-- case: lateral subquery reads an outer hidden column
-- expect: hidden_column
SELECT x.v FROM customers c CROSS JOIN LATERAL (SELECT c.email AS v) x
-- case: lateral arithmetic on an outer hidden column
-- expect: hidden_column
SELECT x.v FROM employees e, LATERAL (SELECT e.salary * 2 AS v) x
-- case: lateral function over an outer hidden column
-- expect: hidden_column
SELECT t.v FROM customers c, LATERAL unnest(ARRAY[c.email]) AS t(v)
-- case: filter oracle
-- expect: hidden_column
SELECT count(*) FROM customers WHERE email LIKE 'a%'
-- case: is not null oracle
-- expect: hidden_column
SELECT count(*) FROM customers WHERE email IS NOT NULL
-- case: exists oracle
-- expect: hidden_column
SELECT 1 WHERE EXISTS (SELECT 1 FROM employees WHERE salary > 100000)
-- case: in oracle
-- expect: hidden_column
SELECT first_name FROM employees WHERE employee_id IN (SELECT employee_id FROM employees WHERE salary > 150000)
-- case: value in a hidden column list
-- expect: hidden_column
SELECT 1 WHERE 'x@example.com' IN (SELECT email FROM customers)
-- case: join predicate
-- expect: hidden_column
SELECT count(*) FROM customers c JOIN employees e ON e.email = c.email
-- case: join predicate with a constant
-- expect: hidden_column
SELECT o.order_id FROM orders o JOIN customers c ON c.customer_id = o.customer_id AND c.email LIKE 'a%'
-- case: case branch
-- expect: hidden_column
SELECT CASE WHEN e.salary > 100000 THEN 'high' ELSE 'low' END FROM employees e
-- case: cast error oracle
-- expect: hidden_column
SELECT email::int FROM customers
-- case: CAST syntax
-- expect: hidden_column
SELECT CAST(salary AS text) FROM employees
-- case: division error oracle
-- expect: hidden_column
SELECT 1 / (salary - 50000) FROM employees
-- case: order by oracle
-- expect: hidden_column
SELECT first_name FROM employees ORDER BY salary DESC LIMIT 1
-- case: order by qualified
-- expect: hidden_column
SELECT 1 FROM customers c ORDER BY c.email
-- case: distinct on
-- expect: hidden_column
SELECT DISTINCT ON (salary) first_name FROM employees
-- case: filter clause
-- expect: hidden_column
SELECT count(*) FILTER (WHERE salary > 100000) FROM employees
-- case: group by
-- expect: hidden_column
SELECT count(*) FROM employees GROUP BY salary
-- case: grouping sets
-- expect: hidden_column
SELECT department, count(*) FROM employees GROUP BY GROUPING SETS ((department), (salary))
-- case: having
-- expect: hidden_column
SELECT department FROM employees GROUP BY department HAVING max(salary) > 100000
-- case: window order
-- expect: hidden_column
SELECT first_name, rank() OVER (ORDER BY salary) FROM employees
-- case: named window
-- expect: hidden_column
SELECT count(*) OVER w FROM customers WINDOW w AS (PARTITION BY email)
-- case: aggregate argument
-- expect: hidden_column
SELECT avg(salary) FROM employees
-- case: string_agg
-- expect: hidden_column
SELECT string_agg(email, ',') FROM customers
-- case: function argument
-- expect: hidden_column
SELECT left(email, 1) FROM customers
-- case: json builder argument
-- expect: hidden_column
SELECT jsonb_build_object('e', e.email) FROM employees e
-- case: row comparison
-- expect: hidden_column
SELECT count(*) FROM customers c WHERE (c.first_name, c.email) > ('a', 'b')
-- case: limit subquery oracle
-- expect: hidden_column
SELECT 1 LIMIT (SELECT count(*) FROM employees WHERE salary > 100000)
-- case: union arm
-- expect: hidden_column
SELECT first_name FROM customers UNION SELECT email FROM customers
-- case: except arm
-- expect: hidden_column
SELECT email FROM customers EXCEPT SELECT ''
-- case: using on a hidden column
-- expect: hidden_column
SELECT count(*) FROM customers c JOIN employees e USING (email)
-- case: natural join of two tables with hidden columns
-- expect: hidden_column
SELECT count(*) FROM customers NATURAL JOIN employees
-- case: natural join with a derived table naming a hidden column
-- expect: hidden_column
SELECT count(*) FROM (SELECT 'a@b.c' AS email) x NATURAL JOIN customers
-- case: tablesample
-- expect: hidden_column
SELECT email FROM customers TABLESAMPLE SYSTEM (10)
-- case: values joined on a hidden column
-- expect: hidden_column
SELECT v.x FROM (VALUES ('a@b.c')) AS v(x) JOIN customers c ON c.email = v.x
-- case: star in exists with a hidden column in its where
-- expect: hidden_column
SELECT 1 WHERE EXISTS (SELECT * FROM employees e WHERE e.salary > 100000)
-- case: star in exists next to a hidden column in its select list
-- expect: hidden_column
SELECT 1 WHERE EXISTS (SELECT *, salary FROM employees)
-- case: star in exists with a hidden column in a join condition
-- expect: hidden_column
SELECT o.order_id FROM orders o WHERE EXISTS (SELECT * FROM customers c JOIN orders o2 ON o2.customer_id = c.customer_id AND c.email LIKE 'a%' WHERE o2.order_id = o.order_id)
-- case: star in exists under intersect compares the hidden columns
-- expect: hidden_column
SELECT 1 WHERE EXISTS (SELECT * FROM employees INTERSECT SELECT * FROM employees WHERE employee_id = 1)
-- case: qualified star in exists under except
-- expect: hidden_column
SELECT 1 WHERE NOT EXISTS (SELECT e.* FROM employees e EXCEPT SELECT e.* FROM employees e WHERE e.employee_id > 1)
-- case: star in exists under union
-- expect: hidden_column
SELECT 1 WHERE EXISTS (SELECT * FROM customers UNION SELECT * FROM customers)
-- case: star in exists grouped by an ordinal
-- expect: hidden_column
SELECT 1 WHERE EXISTS (SELECT * FROM employees GROUP BY 1)
-- case: star in exists with having
-- expect: hidden_column
SELECT 1 WHERE EXISTS (SELECT * FROM employees HAVING count(*) > 1)
-- case: star in exists with distinct
-- expect: hidden_column
SELECT 1 WHERE EXISTS (SELECT DISTINCT * FROM employees)
-- case: star in exists with distinct on an ordinal
-- expect: hidden_column
SELECT 1 WHERE EXISTS (SELECT DISTINCT ON (5) * FROM employees)
-- case: star in exists ordered by an ordinal
-- expect: hidden_column
SELECT 1 WHERE EXISTS (SELECT * FROM employees ORDER BY 5 LIMIT 1)
-- case: star in exists with a window clause
-- expect: hidden_column
SELECT 1 WHERE EXISTS (SELECT * FROM employees WINDOW w AS (ORDER BY 5))
-- case: star in exists with offset
-- expect: hidden_column
SELECT 1 WHERE EXISTS (SELECT * FROM employees OFFSET 1)
-- case: star of a derived table inside exists
-- expect: hidden_column
SELECT 1 WHERE EXISTS (SELECT * FROM (SELECT * FROM employees) s WHERE s.first_name = 'Ann')
-- case: star of a cte inside exists
-- expect: hidden_column
SELECT 1 WHERE EXISTS (WITH x AS (SELECT * FROM employees) SELECT * FROM x)
-- case: composite expansion in exists
-- expect: hidden_column
SELECT 1 WHERE EXISTS (SELECT (e).* FROM employees e)
-- case: star in an array subquery
-- expect: hidden_column
SELECT ARRAY(SELECT e.* FROM employees e)
-- case: star in an in subquery
-- expect: hidden_column
SELECT 1 WHERE (1, 'a', 'b', 'c', 1, 1, 1, 'd') IN (SELECT * FROM employees)
-- case: star in a scalar subquery
-- expect: hidden_column
SELECT (SELECT c.* FROM customers c LIMIT 1)
-- case: star in a scalar subquery inside exists
-- expect: hidden_column
SELECT 1 WHERE EXISTS (SELECT (SELECT e.* FROM employees e LIMIT 1))
-- case: count of a qualified star
-- expect: hidden_column
SELECT count(c.*) FROM customers c
-- case: hidden column everywhere by bare name
-- expect: hidden_column
-- policy: {"hidden_columns": ["ssn"]}
SELECT p.ssn FROM people p
-- case: column alias list where the column is hidden everywhere
-- expect: hidden_column
-- policy: {"hidden_columns": ["ssn"]}
SELECT x.b FROM people AS x(a, b)
-- case: group by prefers the hidden input column over an output alias
-- expect: hidden_column
SELECT first_name AS email FROM customers GROUP BY email
-- case: order by an output alias and a hidden column
-- expect: hidden_column
SELECT first_name AS f FROM customers ORDER BY f, email
-- case: lateral VALUES over an outer hidden column
-- expect: hidden_column
SELECT v.x FROM customers c, LATERAL (VALUES (c.email)) AS v(x)
-- case: scalar subquery in VALUES
-- expect: hidden_column
VALUES ((SELECT max(email) FROM customers))
-- case: function in FROM over an aggregate of a hidden column
-- expect: hidden_column
SELECT * FROM unnest((SELECT array_agg(salary) FROM employees)) AS u(v)
-- case: collation on a hidden column
-- expect: hidden_column
SELECT c.email COLLATE "C" FROM customers c
-- case: xml forest of a hidden column
-- expect: hidden_column
SELECT xmlforest(email) FROM customers
-- case: field of a qualified star
-- expect: hidden_column
SELECT (c.*).email FROM customers c
-- case: subscript after a field selection
-- expect: hidden_column
SELECT (string_to_array((c).email, '@'))[2] FROM customers c
-- case: aggregate ordered by a hidden column
-- expect: hidden_column
SELECT string_agg(first_name, ',' ORDER BY salary) FROM employees
-- case: subquery without FROM reads the outer row
-- expect: hidden_column
SELECT (SELECT x FROM (SELECT email) AS s(x)) FROM customers
-- case: a derived alias shadowing the table name next to the table
-- expect: hidden_column
SELECT count(*) FROM customers, (SELECT 1 AS n) AS s WHERE customers.email LIKE 'a%'
