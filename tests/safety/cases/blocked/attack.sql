-- policy-default: {"hidden_columns": ["customers.email", "employees.salary", "employees.email"]}
-- An attacker's review of the lineage check (issue 9): every case moves a value of a hidden column into
-- output, a predicate, an error, an ordering, a count or a row count. The first cases passed the check
-- before the fix in this branch: a NATURAL join took the common columns from a list of output names that was
-- incomplete (a function's or a join's column alias list renames only some columns; SEARCH and CYCLE add
-- columns to a CTE), so a join on a hidden column went unseen (a filter oracle on employees.email).
-- case: natural join with ROWS FROM whose alias list names only the first column
-- expect: hidden_column
SELECT count(*) FROM employees NATURAL JOIN ROWS FROM (unnest(ARRAY[1]), json_to_record('{"email": "sofia.silva1@company.example"}') AS (email text)) AS f(x)
-- case: natural join with JSON_TABLE renamed in part
-- expect: hidden_column
SELECT e.first_name FROM employees e NATURAL JOIN JSON_TABLE('{"a": 1, "b": "x"}'::jsonb, '$' COLUMNS (a int PATH '$.a', email text PATH '$.b')) AS t(y)
-- case: natural join with XMLTABLE renamed in part
-- expect: hidden_column
SELECT e.first_name FROM employees e NATURAL JOIN XMLTABLE('/r' PASSING CAST('<r/>' AS xml) COLUMNS a int PATH 'a', email text PATH 'b') AS t(y)
-- case: natural join with a join alias list renaming derived columns
-- expect: hidden_column
SELECT count(*) FROM employees NATURAL JOIN ((SELECT 1 AS a) s1 CROSS JOIN (SELECT 'x'::text AS b) s2) AS j(a, email)
-- case: natural join with a renamed join nested in another join
-- expect: hidden_column
SELECT count(*) FROM customers NATURAL JOIN (((SELECT 1 AS a) s1 CROSS JOIN (SELECT 'x'::text AS b) s2) AS j(a, email) CROSS JOIN (SELECT 2 AS c) s3)
-- case: natural join with a cte whose CYCLE mark column is named like a hidden column
-- expect: hidden_column
WITH RECURSIVE t(n) AS (SELECT x FROM (SELECT 1 AS x) s UNION ALL SELECT n + 1 FROM t WHERE n < 1) CYCLE n SET email TO 'a' DEFAULT 'sofia.silva1@company.example' USING p SELECT count(*) FROM employees NATURAL JOIN t
-- case: natural join with a cte whose CYCLE path column is named like a hidden column
-- expect: hidden_column
WITH RECURSIVE t AS (SELECT x AS n FROM (SELECT 1 AS x) s UNION ALL SELECT n + 1 FROM t WHERE n < 1) CYCLE n SET m USING email SELECT count(*) FROM employees NATURAL JOIN t
-- case: natural join with a cte whose SEARCH column is named like a hidden column
-- expect: hidden_column
WITH RECURSIVE t AS (SELECT x AS n FROM (SELECT 1 AS x) s UNION ALL SELECT n + 1 FROM t WHERE n < 1) SEARCH DEPTH FIRST BY n SET salary SELECT count(*) FROM employees NATURAL JOIN t
-- case: form 1: EXPLAIN SELECT first_name FROM employees WHERE salary > 1
-- expect: hidden_column
EXPLAIN SELECT first_name FROM employees WHERE salary > 1
-- case: form 2: SELECT ((e)).salary FROM employees e
-- expect: hidden_column
SELECT ((e)).salary FROM employees e
-- case: form 3: SELECT (ARRAY[1])[salary::int] FROM employees
-- expect: hidden_column
SELECT (ARRAY[1])[salary::int] FROM employees
-- case: form 4: SELECT (SELECT array_agg(e) FROM employees e)
-- expect: hidden_column
SELECT (SELECT array_agg(e) FROM employees e)
-- case: form 5: SELECT (SELECT employees) FROM employees
-- expect: hidden_column
SELECT (SELECT employees) FROM employees
-- case: form 6: SELECT (SELECT salary) FROM employees
-- expect: hidden_column
SELECT (SELECT salary) FROM employees
-- case: form 7: SELECT (a.b).* FROM (SELECT e AS b FROM employees e) a
-- expect: hidden_column
SELECT (a.b).* FROM (SELECT e AS b FROM employees e) a
-- case: form 8: SELECT (a.b).salary FROM (SELECT e AS b FROM employees e) a
-- expect: hidden_column
SELECT (a.b).salary FROM (SELECT e AS b FROM employees e) a
-- case: form 9: SELECT (c).email FROM customers AS c
-- expect: hidden_column
SELECT (c).email FROM customers AS c
-- case: form 10: SELECT (e.*).salary FROM employees e
-- expect: hidden_column
SELECT (e.*).salary FROM employees e
-- case: form 11: SELECT (row(e.*)).f10 FROM employees e
-- expect: hidden_column
SELECT (row(e.*)).f10 FROM employees e
-- case: form 12: SELECT (x.c).email FROM (SELECT c FROM customers c) x
-- expect: hidden_column
SELECT (x.c).email FROM (SELECT c FROM customers c) x
-- case: form 13: SELECT (x.c).first_name FROM (SELECT c FROM customers c) x
-- expect: hidden_column
SELECT (x.c).first_name FROM (SELECT c FROM customers c) x
-- case: form 14: SELECT * FROM (SELECT * FROM employees) t
-- expect: hidden_column
SELECT * FROM (SELECT * FROM employees) t
-- case: form 15: SELECT * FROM (SELECT region_id FROM regions) r NATURAL JOIN employees
-- expect: hidden_column
SELECT * FROM (SELECT region_id FROM regions) r NATURAL JOIN employees
-- case: form 16: SELECT * FROM (TABLE employees) t
-- expect: hidden_column
SELECT * FROM (TABLE employees) t
-- case: form 17: SELECT * FROM ONLY employees
-- expect: hidden_column
SELECT * FROM ONLY employees
-- case: form 18: SELECT * FROM employees e JOIN LATERAL (SELECT 1) x ON true
-- expect: hidden_column
SELECT * FROM employees e JOIN LATERAL (SELECT 1) x ON true
-- case: form 19: SELECT * FROM employees e, LATERAL (SELECT e.*) s
-- expect: hidden_column
SELECT * FROM employees e, LATERAL (SELECT e.*) s
-- case: form 20: SELECT * FROM employees e, ROWS FROM (unnest(ARRAY[e.email])) AS t(x)
-- expect: hidden_column
SELECT * FROM employees e, ROWS FROM (unnest(ARRAY[e.email])) AS t(x)
-- case: form 21: SELECT * FROM employees*
-- expect: hidden_column
SELECT * FROM employees*
-- case: form 22: SELECT * FROM json_each(to_json((SELECT e FROM employees e LIMIT 1)))
-- expect: hidden_column
SELECT * FROM json_each(to_json((SELECT e FROM employees e LIMIT 1)))
-- case: form 23: SELECT * FROM regions NATURAL JOIN employees
-- expect: hidden_column
SELECT * FROM regions NATURAL JOIN employees
-- case: form 24: SELECT 1 FROM employees LIMIT (SELECT min(salary) FROM employees)::int
-- expect: hidden_column
SELECT 1 FROM employees LIMIT (SELECT min(salary) FROM employees)::int
-- case: form 25: SELECT 1 FROM orders FETCH FIRST (SELECT min(salary)::int FROM employe
-- expect: hidden_column
SELECT 1 FROM orders FETCH FIRST (SELECT min(salary)::int FROM employees) ROWS ONLY
-- case: form 26: SELECT 1 FROM orders OFFSET (SELECT min(salary) FROM employees)::int
-- expect: hidden_column
SELECT 1 FROM orders OFFSET (SELECT min(salary) FROM employees)::int
-- case: form 27: SELECT 1 WHERE EXISTS (SELECT 1 FROM employees WHERE salary > 1)
-- expect: hidden_column
SELECT 1 WHERE EXISTS (SELECT 1 FROM employees WHERE salary > 1)
-- case: form 28: SELECT 1/(salary - 100000) FROM employees
-- expect: hidden_column
SELECT 1/(salary - 100000) FROM employees
-- case: form 29: SELECT ARRAY(SELECT e FROM employees e)
-- expect: hidden_column
SELECT ARRAY(SELECT e FROM employees e)
-- case: form 30: SELECT ARRAY[e] FROM employees e
-- expect: hidden_column
SELECT ARRAY[e] FROM employees e
-- case: form 31: SELECT CASE WHEN salary > 100000 THEN 1 END FROM employees
-- expect: hidden_column
SELECT CASE WHEN salary > 100000 THEN 1 END FROM employees
-- case: form 32: SELECT CASE WHEN salary > 200000 THEN 1/0 END FROM employees
-- expect: hidden_column
SELECT CASE WHEN salary > 200000 THEN 1/0 END FROM employees
-- case: form 33: SELECT CAST(e AS text) FROM employees e
-- expect: hidden_column
SELECT CAST(e AS text) FROM employees e
-- case: form 34: SELECT DISTINCT ON (salary) first_name FROM employees
-- expect: hidden_column
SELECT DISTINCT ON (salary) first_name FROM employees
-- case: form 35: SELECT JSON_ARRAY(salary) FROM employees
-- expect: hidden_column
SELECT JSON_ARRAY(salary) FROM employees
-- case: form 36: SELECT JSON_ARRAYAGG(email) FROM employees
-- expect: hidden_column
SELECT JSON_ARRAYAGG(email) FROM employees
-- case: form 37: SELECT JSON_OBJECT('a': salary) FROM employees
-- expect: hidden_column
SELECT JSON_OBJECT('a': salary) FROM employees
-- case: form 38: SELECT JSON_OBJECTAGG(first_name: salary) FROM employees
-- expect: hidden_column
SELECT JSON_OBJECTAGG(first_name: salary) FROM employees
-- case: form 39: SELECT JSON_QUERY(to_jsonb(e), '$.salary') FROM employees e
-- expect: hidden_column
SELECT JSON_QUERY(to_jsonb(e), '$.salary') FROM employees e
-- case: form 40: SELECT JSON_SCALAR(salary) FROM employees
-- expect: hidden_column
SELECT JSON_SCALAR(salary) FROM employees
-- case: form 41: SELECT JSON_VALUE(jsonb_build_object('a', email), '$.a') FROM employee
-- expect: hidden_column
SELECT JSON_VALUE(jsonb_build_object('a', email), '$.a') FROM employees
-- case: form 42: SELECT ROW(e.*)::text FROM employees e
-- expect: hidden_column
SELECT ROW(e.*)::text FROM employees e
-- case: form 43: SELECT U&"\0065mail" FROM customers
-- expect: hidden_column
SELECT U&"\0065mail" FROM customers
-- case: form 44: SELECT U&"sal\0061ry" FROM employees
-- expect: hidden_column
SELECT U&"sal\0061ry" FROM employees
-- case: form 45: SELECT a FROM employees e(a, b, c, salary)
-- expect: hidden_column
SELECT a FROM employees e(a, b, c, salary)
-- case: form 46: SELECT a.b FROM (SELECT e AS b FROM employees e) a
-- expect: hidden_column
SELECT a.b FROM (SELECT e AS b FROM employees e) a
-- case: form 47: SELECT array_agg(first_name ORDER BY salary) FROM employees
-- expect: hidden_column
SELECT array_agg(first_name ORDER BY salary) FROM employees
-- case: form 48: SELECT c.email FROM (SELECT first_name, email FROM customers) AS c
-- expect: hidden_column
SELECT c.email FROM (SELECT first_name, email FROM customers) AS c
-- case: form 49: SELECT c.first_name FROM customers c WHERE (SELECT c.email) LIKE 'a%'
-- expect: hidden_column
SELECT c.first_name FROM customers c WHERE (SELECT c.email) LIKE 'a%'
-- case: form 50: SELECT c.first_name FROM customers c, LATERAL (SELECT c.email) x(e) WH
-- expect: hidden_column
SELECT c.first_name FROM customers c, LATERAL (SELECT c.email) x(e) WHERE x.e LIKE 'a%'
-- case: form 51: SELECT coalesce(NULL, email) FROM employees
-- expect: hidden_column
SELECT coalesce(NULL, email) FROM employees
-- case: form 52: SELECT column1 FROM (VALUES ((SELECT max(salary) FROM employees))) v
-- expect: hidden_column
SELECT column1 FROM (VALUES ((SELECT max(salary) FROM employees))) v
-- case: form 53: SELECT concat(e) FROM employees e
-- expect: hidden_column
SELECT concat(e) FROM employees e
-- case: form 54: SELECT count(*) FILTER (WHERE salary > 100000) FROM employees
-- expect: hidden_column
SELECT count(*) FILTER (WHERE salary > 100000) FROM employees
-- case: form 55: SELECT count(*) FROM (SELECT 1 FROM employees WHERE salary > 100000) s
-- expect: hidden_column
SELECT count(*) FROM (SELECT 1 FROM employees WHERE salary > 100000) s
-- case: form 56: SELECT count(*) FROM (SELECT salary FROM employees) s
-- expect: hidden_column
SELECT count(*) FROM (SELECT salary FROM employees) s
-- case: form 57: SELECT count(*) FROM customers NATURAL JOIN ((SELECT 1 AS a) s1 CROSS 
-- expect: hidden_column
SELECT count(*) FROM customers NATURAL JOIN ((SELECT 1 AS a) s1 CROSS JOIN (SELECT 'x'::text AS b) s2) AS j(a, email)
-- case: form 58: SELECT count(*) FROM customers c WHERE position('@' in c::text) > 0
-- expect: hidden_column
SELECT count(*) FROM customers c WHERE position('@' in c::text) > 0
-- case: form 59: SELECT count(*) FROM employees JOIN (SELECT 'x' AS email) s USING (ema
-- expect: hidden_column
SELECT count(*) FROM employees JOIN (SELECT 'x' AS email) s USING (email)
-- case: form 60: SELECT count(*) FROM employees NATURAL JOIN ((SELECT 1 AS a) s1 CROSS 
-- expect: hidden_column
SELECT count(*) FROM employees NATURAL JOIN ((SELECT 1 AS a) s1 CROSS JOIN (SELECT 'sofia.silva1@company.example'::text AS b) s2) AS j(a, email)
-- case: form 61: SELECT count(*) FROM employees NATURAL JOIN ((SELECT 1 AS a) s1 CROSS 
-- expect: hidden_column
SELECT count(*) FROM employees NATURAL JOIN ((SELECT 1 AS a) s1 CROSS JOIN (SELECT 'x'::text AS b) s2) AS j(a, email)
-- case: form 62: SELECT count(*) FROM employees NATURAL JOIN (SELECT 1 AS a, 'x' AS ema
-- expect: hidden_column
SELECT count(*) FROM employees NATURAL JOIN (SELECT 1 AS a, 'x' AS email) AS v(b)
-- case: form 63: SELECT count(*) FROM employees NATURAL JOIN (TABLE regions) r
-- expect: hidden_column
SELECT count(*) FROM employees NATURAL JOIN (TABLE regions) r
-- case: form 64: SELECT count(*) FROM employees NATURAL JOIN ROWS FROM (unnest(ARRAY[1]
-- expect: hidden_column
SELECT count(*) FROM employees NATURAL JOIN ROWS FROM (unnest(ARRAY[1]), json_to_record('{"email": "sofia.silva1@company.example"}') AS (email text)) AS f(x)
-- case: form 65: SELECT count(*) FROM employees NATURAL JOIN ROWS FROM (unnest(ARRAY[1]
-- expect: hidden_column
SELECT count(*) FROM employees NATURAL JOIN ROWS FROM (unnest(ARRAY[1]), json_to_record('{"email": "x"}') AS (email text)) AS f(x)
-- case: form 66: SELECT count(*) FROM employees NATURAL JOIN unnest(ARRAY[1], ARRAY['x'
-- expect: hidden_column
SELECT count(*) FROM employees NATURAL JOIN unnest(ARRAY[1], ARRAY['x']) AS f(a)
-- case: form 67: SELECT count(*) FROM employees NATURAL JOIN unnest(ARRAY[1], ARRAY[100
-- expect: hidden_column
SELECT count(*) FROM employees NATURAL JOIN unnest(ARRAY[1], ARRAY[100000.00]) AS f(a, salary)
-- case: form 68: SELECT count(*) FROM employees e GROUP BY e
-- expect: hidden_column
SELECT count(*) FROM employees e GROUP BY e
-- case: form 69: SELECT count(*) FROM employees e, generate_series(1, 2) g WHERE g < e.
-- expect: hidden_column
SELECT count(*) FROM employees e, generate_series(1, 2) g WHERE g < e.salary
-- case: form 70: SELECT count(DISTINCT salary) FROM employees
-- expect: hidden_column
SELECT count(DISTINCT salary) FROM employees
-- case: form 71: SELECT customers.first_name FROM (SELECT first_name, email FROM custom
-- expect: hidden_column
SELECT customers.first_name FROM (SELECT first_name, email FROM customers) AS customers
-- case: form 72: SELECT e.U&"sal\0061ry" FROM employees e
-- expect: hidden_column
SELECT e.U&"sal\0061ry" FROM employees e
-- case: form 73: SELECT e.first_name FROM employees e INNER JOIN employees m ON m.emplo
-- expect: hidden_column
SELECT e.first_name FROM employees e INNER JOIN employees m ON m.employee_id = e.manager_id AND m.salary < e.salary
-- case: form 74: SELECT e.first_name FROM employees e NATURAL JOIN JSON_TABLE('{"a": 1,
-- expect: hidden_column
SELECT e.first_name FROM employees e NATURAL JOIN JSON_TABLE('{"a": 1, "b": "x"}'::jsonb, '$' COLUMNS (a int PATH '$.a', email text PATH '$.b')) AS t(y)
-- case: form 75: SELECT e.first_name FROM employees e WHERE e.salary IS DISTINCT FROM 1
-- expect: hidden_column
SELECT e.first_name FROM employees e WHERE e.salary IS DISTINCT FROM 1
-- case: form 76: SELECT e.hash_record FROM employees e
-- expect: hidden_column
SELECT e.hash_record FROM employees e
-- case: form 77: SELECT e.pg_column_size FROM employees e
-- expect: hidden_column
SELECT e.pg_column_size FROM employees e
-- case: form 78: SELECT e.record_out FROM employees e
-- expect: hidden_column
SELECT e.record_out FROM employees e
-- case: form 79: SELECT e.row_to_json FROM employees e
-- expect: hidden_column
SELECT e.row_to_json FROM employees e
-- case: form 80: SELECT e.salary AS x FROM employees e GROUP BY x
-- expect: hidden_column
SELECT e.salary AS x FROM employees e GROUP BY x
-- case: form 81: SELECT e.to_json FROM employees e
-- expect: hidden_column
SELECT e.to_json FROM employees e
-- case: form 82: SELECT e::varchar FROM employees e
-- expect: hidden_column
SELECT e::varchar FROM employees e
-- case: form 83: SELECT email AS first_name FROM employees GROUP BY first_name, email
-- expect: hidden_column
SELECT email AS first_name FROM employees GROUP BY first_name, email
-- case: form 84: SELECT email FROM customers c WHERE false
-- expect: hidden_column
SELECT email FROM customers c WHERE false
-- case: form 85: SELECT email::int FROM customers
-- expect: hidden_column
SELECT email::int FROM customers
-- case: form 86: SELECT email::json FROM customers
-- expect: hidden_column
SELECT email::json FROM customers
-- case: form 87: SELECT first_name COLLATE "C" FROM employees ORDER BY email COLLATE "C
-- expect: hidden_column
SELECT first_name COLLATE "C" FROM employees ORDER BY email COLLATE "C"
-- case: form 88: SELECT first_name FROM "public"."employees" e WHERE e."salary" > 1
-- expect: hidden_column
SELECT first_name FROM "public"."employees" e WHERE e."salary" > 1
-- case: form 89: SELECT first_name FROM ONLY employees WHERE salary > 100000
-- expect: hidden_column
SELECT first_name FROM ONLY employees WHERE salary > 100000
-- case: form 90: SELECT first_name FROM PUBLIC.EMPLOYEES WHERE SALARY > 1
-- expect: hidden_column
SELECT first_name FROM PUBLIC.EMPLOYEES WHERE SALARY > 1
-- case: form 91: SELECT first_name FROM customers c ORDER BY c
-- expect: hidden_column
SELECT first_name FROM customers c ORDER BY c
-- case: form 92: SELECT first_name FROM employees GROUP BY 1 HAVING sum(salary) > 0
-- expect: hidden_column
SELECT first_name FROM employees GROUP BY 1 HAVING sum(salary) > 0
-- case: form 93: SELECT first_name FROM employees GROUP BY GROUPING SETS ((first_name),
-- expect: hidden_column
SELECT first_name FROM employees GROUP BY GROUPING SETS ((first_name), (salary))
-- case: form 94: SELECT first_name FROM employees GROUP BY ROLLUP (first_name, salary)
-- expect: hidden_column
SELECT first_name FROM employees GROUP BY ROLLUP (first_name, salary)
-- case: form 95: SELECT first_name FROM employees INTERSECT SELECT first_name FROM empl
-- expect: hidden_column
SELECT first_name FROM employees INTERSECT SELECT first_name FROM employees WHERE salary > 1
-- case: form 96: SELECT first_name FROM employees ORDER BY (SELECT salary)
-- expect: hidden_column
SELECT first_name FROM employees ORDER BY (SELECT salary)
-- case: form 97: SELECT first_name FROM employees ORDER BY 1, salary
-- expect: hidden_column
SELECT first_name FROM employees ORDER BY 1, salary
-- case: form 98: SELECT first_name FROM employees ORDER BY salary
-- expect: hidden_column
SELECT first_name FROM employees ORDER BY salary
-- case: form 99: SELECT first_name FROM employees ORDER BY salary USING <
-- expect: hidden_column
SELECT first_name FROM employees ORDER BY salary USING <
-- case: form 100: SELECT first_name FROM employees UNION ALL SELECT email FROM employees
-- expect: hidden_column
SELECT first_name FROM employees UNION ALL SELECT email FROM employees
-- case: form 101: SELECT first_name FROM employees UNION ALL SELECT salary::text FROM em
-- expect: hidden_column
SELECT first_name FROM employees UNION ALL SELECT salary::text FROM employees
-- case: form 102: SELECT first_name FROM employees WHERE (first_name, salary) = ('a', 1)
-- expect: hidden_column
SELECT first_name FROM employees WHERE (first_name, salary) = ('a', 1)
-- case: form 103: SELECT first_name FROM employees WHERE 100000 = ANY(ARRAY[salary])
-- expect: hidden_column
SELECT first_name FROM employees WHERE 100000 = ANY(ARRAY[salary])
-- case: form 104: SELECT first_name FROM employees WHERE EXISTS (SELECT salary)
-- expect: hidden_column
SELECT first_name FROM employees WHERE EXISTS (SELECT salary)
-- case: form 105: SELECT first_name FROM employees WHERE email COLLATE "C" > 'a'
-- expect: hidden_column
SELECT first_name FROM employees WHERE email COLLATE "C" > 'a'
-- case: form 106: SELECT first_name FROM employees WHERE email IS JSON
-- expect: hidden_column
SELECT first_name FROM employees WHERE email IS JSON
-- case: form 107: SELECT first_name FROM employees WHERE email LIKE 'a%'
-- expect: hidden_column
SELECT first_name FROM employees WHERE email LIKE 'a%'
-- case: form 108: SELECT first_name FROM employees WHERE email SIMILAR TO 'a%'
-- expect: hidden_column
SELECT first_name FROM employees WHERE email SIMILAR TO 'a%'
-- case: form 109: SELECT first_name FROM employees WHERE email ~ '^a'
-- expect: hidden_column
SELECT first_name FROM employees WHERE email ~ '^a'
-- case: form 110: SELECT first_name FROM employees WHERE email ~ (SELECT '(')
-- expect: hidden_column
SELECT first_name FROM employees WHERE email ~ (SELECT '(')
-- case: form 111: SELECT first_name FROM employees WHERE email::bytea > '\x00'
-- expect: hidden_column
SELECT first_name FROM employees WHERE email::bytea > '\x00'
-- case: form 112: SELECT first_name FROM employees WHERE employees.email = 'x'
-- expect: hidden_column
SELECT first_name FROM employees WHERE employees.email = 'x'
-- case: form 113: SELECT first_name FROM employees WHERE length(email) > 10
-- expect: hidden_column
SELECT first_name FROM employees WHERE length(email) > 10
-- case: form 114: SELECT first_name FROM employees WHERE pg_typeof(salary) IS NOT NULL
-- expect: hidden_column
SELECT first_name FROM employees WHERE pg_typeof(salary) IS NOT NULL
-- case: form 115: SELECT first_name FROM employees WHERE salary BETWEEN 1 AND 2
-- expect: hidden_column
SELECT first_name FROM employees WHERE salary BETWEEN 1 AND 2
-- case: form 116: SELECT first_name FROM employees WHERE salary IN (1, 2)
-- expect: hidden_column
SELECT first_name FROM employees WHERE salary IN (1, 2)
-- case: form 117: SELECT first_name FROM employees WHERE salary IS NULL
-- expect: hidden_column
SELECT first_name FROM employees WHERE salary IS NULL
-- case: form 118: SELECT first_name FROM employees WHERE salary::text LIKE '1%'
-- expect: hidden_column
SELECT first_name FROM employees WHERE salary::text LIKE '1%'
-- case: form 119: SELECT first_name FROM employees WHERE xmlexists('//x' PASSING BY REF 
-- expect: hidden_column
SELECT first_name FROM employees WHERE xmlexists('//x' PASSING BY REF xmlelement(name x, email))
-- case: form 120: SELECT first_name FROM employees e JOIN regions r ON r.region_id = e.r
-- expect: hidden_column
SELECT first_name FROM employees e JOIN regions r ON r.region_id = e.region_id AND e.salary > 1
-- case: form 121: SELECT first_name FROM employees e WHERE (e).salary > 0
-- expect: hidden_column
SELECT first_name FROM employees e WHERE (e).salary > 0
-- case: form 122: SELECT first_name FROM employees e WHERE EXISTS (SELECT 1 WHERE e.sala
-- expect: hidden_column
SELECT first_name FROM employees e WHERE EXISTS (SELECT 1 WHERE e.salary > 100000)
-- case: form 123: SELECT first_name FROM employees e WHERE NOT (e.salary < 1)
-- expect: hidden_column
SELECT first_name FROM employees e WHERE NOT (e.salary < 1)
-- case: form 124: SELECT first_name FROM employees e WHERE e = e
-- expect: hidden_column
SELECT first_name FROM employees e WHERE e = e
-- case: form 125: SELECT first_name FROM employees e WHERE e IS NOT NULL
-- expect: hidden_column
SELECT first_name FROM employees e WHERE e IS NOT NULL
-- case: form 126: SELECT first_name FROM employees e WHERE e.email = ANY('{a}')
-- expect: hidden_column
SELECT first_name FROM employees e WHERE e.email = ANY('{a}')
-- case: form 127: SELECT first_name FROM employees e WHERE e.email IN (SELECT 'x')
-- expect: hidden_column
SELECT first_name FROM employees e WHERE e.email IN (SELECT 'x')
-- case: form 128: SELECT first_name FROM employees e WHERE e.email NOTNULL
-- expect: hidden_column
SELECT first_name FROM employees e WHERE e.email NOTNULL
-- case: form 129: SELECT first_name FROM employees e WHERE e.email::int = 1
-- expect: hidden_column
SELECT first_name FROM employees e WHERE e.email::int = 1
-- case: form 130: SELECT first_name FROM employees e WHERE e.salary > ALL (SELECT 1)
-- expect: hidden_column
SELECT first_name FROM employees e WHERE e.salary > ALL (SELECT 1)
-- case: form 131: SELECT first_name FROM employees e WHERE e.salary::int % 2 = 0
-- expect: hidden_column
SELECT first_name FROM employees e WHERE e.salary::int % 2 = 0
-- case: form 132: SELECT first_name FROM employees e WHERE row(e.salary) > row(1)
-- expect: hidden_column
SELECT first_name FROM employees e WHERE row(e.salary) > row(1)
-- case: form 133: SELECT first_name FROM employees e WHERE salary = ANY (SELECT salary F
-- expect: hidden_column
SELECT first_name FROM employees e WHERE salary = ANY (SELECT salary FROM employees)
-- case: form 134: SELECT first_name FROM employees e WINDOW w AS (ORDER BY salary) ORDER
-- expect: hidden_column
SELECT first_name FROM employees e WINDOW w AS (ORDER BY salary) ORDER BY rank() OVER w
-- case: form 135: SELECT first_name FROM employees e, LATERAL (SELECT salary FROM (SELEC
-- expect: hidden_column
SELECT first_name FROM employees e, LATERAL (SELECT salary FROM (SELECT 1 AS x) q) z
-- case: form 136: SELECT first_name FROM employees e, employees AS salary WHERE salary.s
-- expect: hidden_column
SELECT first_name FROM employees e, employees AS salary WHERE salary.salary > 0
-- case: form 137: SELECT first_name FROM public.employees WHERE public.employees.salary 
-- expect: hidden_column
SELECT first_name FROM public.employees WHERE public.employees.salary > 1
-- case: form 138: SELECT first_name, count(*) OVER (PARTITION BY salary) FROM employees
-- expect: hidden_column
SELECT first_name, count(*) OVER (PARTITION BY salary) FROM employees
-- case: form 139: SELECT format('%s', e) FROM employees e
-- expect: hidden_column
SELECT format('%s', e) FROM employees e
-- case: form 140: SELECT generate_series(1, (SELECT max(salary)::int FROM employees) / 1
-- expect: hidden_column
SELECT generate_series(1, (SELECT max(salary)::int FROM employees) / 1000)
-- case: form 141: SELECT greatest(salary, 0) FROM employees
-- expect: hidden_column
SELECT greatest(salary, 0) FROM employees
-- case: form 142: SELECT json_build_object('a', e.*) FROM employees e
-- expect: hidden_column
SELECT json_build_object('a', e.*) FROM employees e
-- case: form 143: SELECT jsonb_path_query('{}', email::jsonpath) FROM customers
-- expect: hidden_column
SELECT jsonb_path_query('{}', email::jsonpath) FROM customers
-- case: form 144: SELECT jsonb_populate_record(NULL::employees, to_jsonb(e)) FROM employ
-- expect: hidden_column
SELECT jsonb_populate_record(NULL::employees, to_jsonb(e)) FROM employees e
-- case: form 145: SELECT max(e.salary) FROM employees e
-- expect: hidden_column
SELECT max(e.salary) FROM employees e
-- case: form 146: SELECT md5(e::text) FROM employees e
-- expect: hidden_column
SELECT md5(e::text) FROM employees e
-- case: form 147: SELECT mode() WITHIN GROUP (ORDER BY salary) FROM employees
-- expect: hidden_column
SELECT mode() WITHIN GROUP (ORDER BY salary) FROM employees
-- case: form 148: SELECT name FROM (SELECT salary AS name FROM employees) x
-- expect: hidden_column
SELECT name FROM (SELECT salary AS name FROM employees) x
-- case: form 149: SELECT name FROM (SELECT salary FROM employees) s(name)
-- expect: hidden_column
SELECT name FROM (SELECT salary FROM employees) s(name)
-- case: form 150: SELECT name FROM (VALUES (1)) v(name), employees WHERE salary > 0
-- expect: hidden_column
SELECT name FROM (VALUES (1)) v(name), employees WHERE salary > 0
-- case: form 151: SELECT nullif(first_name, email) FROM employees
-- expect: hidden_column
SELECT nullif(first_name, email) FROM employees
-- case: form 152: SELECT num_nulls(e.*) FROM employees e
-- expect: hidden_column
SELECT num_nulls(e.*) FROM employees e
-- case: form 153: SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY salary) FROM employ
-- expect: hidden_column
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY salary) FROM employees
-- case: form 154: SELECT pg_column_size(e) FROM employees e
-- expect: hidden_column
SELECT pg_column_size(e) FROM employees e
-- case: form 155: SELECT rank() OVER w FROM employees WINDOW w AS (ORDER BY salary)
-- expect: hidden_column
SELECT rank() OVER w FROM employees WINDOW w AS (ORDER BY salary)
-- case: form 156: SELECT rank(100000) WITHIN GROUP (ORDER BY salary) FROM employees
-- expect: hidden_column
SELECT rank(100000) WITHIN GROUP (ORDER BY salary) FROM employees
-- case: form 157: SELECT regexp_match('x', email) FROM customers
-- expect: hidden_column
SELECT regexp_match('x', email) FROM customers
-- case: form 158: SELECT s FROM employees e, LATERAL generate_series(1, e.salary::int) s
-- expect: hidden_column
SELECT s FROM employees e, LATERAL generate_series(1, e.salary::int) s LIMIT 1
-- case: form 159: SELECT s.* FROM employees e, LATERAL (SELECT e.first_name, e.email) s
-- expect: hidden_column
SELECT s.* FROM employees e, LATERAL (SELECT e.first_name, e.email) s
-- case: form 160: SELECT s.x FROM employees e, LATERAL (VALUES (e.salary)) s(x)
-- expect: hidden_column
SELECT s.x FROM employees e, LATERAL (VALUES (e.salary)) s(x)
-- case: form 161: SELECT salary AS first_name FROM employees ORDER BY first_name
-- expect: hidden_column
SELECT salary AS first_name FROM employees ORDER BY first_name
-- case: form 162: SELECT salary FROM employees AS t(salary)
-- expect: hidden_column
SELECT salary FROM employees AS t(salary)
-- case: form 163: SELECT salary.first_name FROM employees AS salary
-- expect: hidden_column
SELECT salary.first_name FROM employees AS salary
-- case: form 164: SELECT string_agg(e::text, ',') FROM employees e
-- expect: hidden_column
SELECT string_agg(e::text, ',') FROM employees e
-- case: form 165: SELECT t FROM employees AS t
-- expect: hidden_column
SELECT t FROM employees AS t
-- case: form 166: SELECT t.* FROM employees e, JSON_TABLE('{}'::jsonb, '$' COLUMNS (v te
-- expect: hidden_column
SELECT t.* FROM employees e, JSON_TABLE('{}'::jsonb, '$' COLUMNS (v text PATH '$.x' DEFAULT e.email ON EMPTY)) t
-- case: form 167: SELECT t.* FROM employees e, JSON_TABLE('{}'::jsonb, '$' PASSING e.sal
-- expect: hidden_column
SELECT t.* FROM employees e, JSON_TABLE('{}'::jsonb, '$' PASSING e.salary AS s COLUMNS (v numeric PATH '$s')) t
-- case: form 168: SELECT t.* FROM employees e, JSON_TABLE(to_jsonb(e.salary), '$' COLUMN
-- expect: hidden_column
SELECT t.* FROM employees e, JSON_TABLE(to_jsonb(e.salary), '$' COLUMNS (v numeric PATH '$')) t
-- case: form 169: SELECT t.* FROM employees e, XMLTABLE('/r' PASSING xmlelement(name r, 
-- expect: hidden_column
SELECT t.* FROM employees e, XMLTABLE('/r' PASSING xmlelement(name r, e.salary) COLUMNS v text PATH '.') t
-- case: form 170: SELECT to_json(e) FROM employees e
-- expect: hidden_column
SELECT to_json(e) FROM employees e
-- case: form 171: SELECT to_number(email, '999') FROM customers
-- expect: hidden_column
SELECT to_number(email, '999') FROM customers
-- case: form 172: SELECT u FROM employees e, unnest(ARRAY[e.salary]) WITH ORDINALITY AS 
-- expect: hidden_column
SELECT u FROM employees e, unnest(ARRAY[e.salary]) WITH ORDINALITY AS u(u, n)
-- case: form 173: SELECT u.* FROM regions JOIN employees USING (region_id) AS u
-- expect: hidden_column
SELECT u.* FROM regions JOIN employees USING (region_id) AS u
-- case: form 174: SELECT v.* FROM (VALUES (1)) v(x) JOIN employees e ON e.salary = v.x
-- expect: hidden_column
SELECT v.* FROM (VALUES (1)) v(x) JOIN employees e ON e.salary = v.x
-- case: form 175: SELECT x FROM (SELECT 1) t(x) WHERE x IN (SELECT salary FROM employees
-- expect: hidden_column
SELECT x FROM (SELECT 1) t(x) WHERE x IN (SELECT salary FROM employees)
-- case: form 176: SELECT x FROM (SELECT e.salary AS x FROM employees e) s GROUP BY x
-- expect: hidden_column
SELECT x FROM (SELECT e.salary AS x FROM employees e) s GROUP BY x
-- case: form 177: SELECT x FROM employees e CROSS JOIN LATERAL (SELECT e.salary) s(x)
-- expect: hidden_column
SELECT x FROM employees e CROSS JOIN LATERAL (SELECT e.salary) s(x)
-- case: form 178: SELECT x FROM employees e, LATERAL (SELECT e) s(x)
-- expect: hidden_column
SELECT x FROM employees e, LATERAL (SELECT e) s(x)
-- case: form 179: SELECT x FROM employees e, LATERAL (SELECT e.*) s(x)
-- expect: hidden_column
SELECT x FROM employees e, LATERAL (SELECT e.*) s(x)
-- case: form 180: SELECT x FROM employees, LATERAL (SELECT employees) s(x)
-- expect: hidden_column
SELECT x FROM employees, LATERAL (SELECT employees) s(x)
-- case: form 181: SELECT x FROM employees, LATERAL (SELECT salary) s(x)
-- expect: hidden_column
SELECT x FROM employees, LATERAL (SELECT salary) s(x)
-- case: form 182: SELECT x.f10 FROM (SELECT row(e.*) AS r FROM employees e) s, LATERAL (
-- expect: hidden_column
SELECT x.f10 FROM (SELECT row(e.*) AS r FROM employees e) s, LATERAL (SELECT (s.r).f10) x(f10)
-- case: form 183: SELECT x.name FROM (SELECT salary AS name FROM employees) x
-- expect: hidden_column
SELECT x.name FROM (SELECT salary AS name FROM employees) x
-- case: form 184: SELECT xmlelement(name x, e.*) FROM employees e
-- expect: hidden_column
SELECT xmlelement(name x, e.*) FROM employees e
-- case: form 185: SELECT xmlelement(name x, xmlattributes(salary AS s)) FROM employees
-- expect: hidden_column
SELECT xmlelement(name x, xmlattributes(salary AS s)) FROM employees
-- case: form 186: SELECT xmlforest(salary) FROM employees
-- expect: hidden_column
SELECT xmlforest(salary) FROM employees
-- case: form 187: WITH RECURSIVE t AS (SELECT x AS n FROM (SELECT 1 AS x) s UNION ALL SE
-- expect: hidden_column
WITH RECURSIVE t AS (SELECT x AS n FROM (SELECT 1 AS x) s UNION ALL SELECT n + 1 FROM t WHERE n < 1) CYCLE n SET email TO 'a' DEFAULT 'sofia.silva1@company.example' USING p SELECT count(*) FROM employees NATURAL JOIN t
-- case: form 188: WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n
-- expect: hidden_column
WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 1) CYCLE n SET email TO 'a' DEFAULT 'x' USING p SELECT count(*) FROM employees NATURAL JOIN t
-- case: form 189: WITH RECURSIVE t(n) AS (SELECT x FROM (SELECT 1 AS x) s UNION ALL SELE
-- expect: hidden_column
WITH RECURSIVE t(n) AS (SELECT x FROM (SELECT 1 AS x) s UNION ALL SELECT n + 1 FROM t WHERE n < 1) CYCLE n SET email TO 'a' DEFAULT 'sofia.silva1@company.example' USING p SELECT count(*) FROM employees NATURAL JOIN t
-- case: form 190: WITH RECURSIVE t(n, s) AS (SELECT 1, e.salary FROM employees e UNION A
-- expect: hidden_column
WITH RECURSIVE t(n, s) AS (SELECT 1, e.salary FROM employees e UNION ALL SELECT n + 1, s FROM t WHERE n < 1) SELECT * FROM t
-- case: form 191: WITH e AS (SELECT first_name AS name, salary AS pay FROM employees) SE
-- expect: hidden_column
WITH e AS (SELECT first_name AS name, salary AS pay FROM employees) SELECT name FROM e
-- case: form 192: WITH e(name) AS (SELECT salary FROM employees) SELECT name FROM e
-- expect: hidden_column
WITH e(name) AS (SELECT salary FROM employees) SELECT name FROM e
-- case: form 193: WITH employees AS (SELECT * FROM employees) SELECT * FROM employees
-- expect: hidden_column
WITH employees AS (SELECT * FROM employees) SELECT * FROM employees
-- case: form 194: WITH s AS (SELECT salary x FROM employees) SELECT count(*) FROM s WHER
-- expect: hidden_column
WITH s AS (SELECT salary x FROM employees) SELECT count(*) FROM s WHERE x > 1
-- case: form 195: WITH s AS MATERIALIZED (SELECT salary FROM employees) SELECT count(*) 
-- expect: hidden_column
WITH s AS MATERIALIZED (SELECT salary FROM employees) SELECT count(*) FROM s
-- case: field star of a hidden composite column
-- expect: hidden_column
-- policy: {"hidden_columns": ["people.address"]}
SELECT (address).* FROM people
-- case: field star of a hidden composite column in a correlated subquery
-- expect: hidden_column
-- policy: {"hidden_columns": ["people.address"]}
SELECT (SELECT (address).* LIMIT 1) FROM people
-- case: more 1: SELECT '' || e FROM employees e
-- expect: hidden_column
SELECT '' || e FROM employees e
-- case: more 2: SELECT (SELECT max(e.salary) FROM (SELECT 1) x) FROM employees e
-- expect: hidden_column
SELECT (SELECT max(e.salary) FROM (SELECT 1) x) FROM employees e
-- case: more 3: SELECT * FROM (SELECT * FROM (SELECT e.email FROM employees e) a) b
-- expect: hidden_column
SELECT * FROM (SELECT * FROM (SELECT e.email FROM employees e) a) b
-- case: more 4: SELECT * FROM employees e, LATERAL ROWS FROM (generate_series(1, e.sal
-- expect: hidden_column
SELECT * FROM employees e, LATERAL ROWS FROM (generate_series(1, e.salary::int / 100000)) g
-- case: more 5: SELECT COALESCE(NULL, e.email) FROM employees e
-- expect: hidden_column
SELECT COALESCE(NULL, e.email) FROM employees e
-- case: more 6: SELECT GREATEST(e.salary) FROM employees e
-- expect: hidden_column
SELECT GREATEST(e.salary) FROM employees e
-- case: more 7: SELECT JSON_ARRAY(SELECT e FROM employees e)
-- expect: hidden_column
SELECT JSON_ARRAY(SELECT e FROM employees e)
-- case: more 8: SELECT JSON_ARRAY(SELECT salary FROM employees)
-- expect: hidden_column
SELECT JSON_ARRAY(SELECT salary FROM employees)
-- case: more 9: SELECT JSON_ARRAYAGG(first_name ORDER BY salary) FROM employees
-- expect: hidden_column
SELECT JSON_ARRAYAGG(first_name ORDER BY salary) FROM employees
-- case: more 10: SELECT JSON_OBJECTAGG(first_name VALUE email) FROM employees
-- expect: hidden_column
SELECT JSON_OBJECTAGG(first_name VALUE email) FROM employees
-- case: more 11: SELECT JSON_SERIALIZE(JSON_OBJECT('a' VALUE email)) FROM customers
-- expect: hidden_column
SELECT JSON_SERIALIZE(JSON_OBJECT('a' VALUE email)) FROM customers
-- case: more 12: SELECT JSON_VALUE(jsonb_build_object('s', 1), '$.s' DEFAULT salary ON 
-- expect: hidden_column
SELECT JSON_VALUE(jsonb_build_object('s', 1), '$.s' DEFAULT salary ON EMPTY) FROM employees
-- case: more 13: SELECT XMLSERIALIZE(CONTENT xmlelement(name a, email) AS text) FROM cu
-- expect: hidden_column
SELECT XMLSERIALIZE(CONTENT xmlelement(name a, email) AS text) FROM customers
-- case: more 14: SELECT array_position(ARRAY[330200.00], salary) FROM employees
-- expect: hidden_column
SELECT array_position(ARRAY[330200.00], salary) FROM employees
-- case: more 15: SELECT count(*) FROM employees e GROUP BY e.*
-- expect: hidden_column
SELECT count(*) FROM employees e GROUP BY e.*
-- case: more 16: SELECT count(*) FROM employees e JOIN LATERAL (SELECT 1) x ON e.salary
-- expect: hidden_column
SELECT count(*) FROM employees e JOIN LATERAL (SELECT 1) x ON e.salary > 300000
-- case: more 17: SELECT count(*) FROM employees e, LATERAL (SELECT WHERE e.salary > 300
-- expect: hidden_column
SELECT count(*) FROM employees e, LATERAL (SELECT WHERE e.salary > 300000) x
-- case: more 18: SELECT e || '' FROM employees e
-- expect: hidden_column
SELECT e || '' FROM employees e
-- case: more 19: SELECT e.first_name FROM employees e ORDER BY e.salary DESC NULLS LAST
-- expect: hidden_column
SELECT e.first_name FROM employees e ORDER BY e.salary DESC NULLS LAST LIMIT 1
-- case: more 20: SELECT e.first_name FROM employees e WHERE e.salary IN (VALUES (330200
-- expect: hidden_column
SELECT e.first_name FROM employees e WHERE e.salary IN (VALUES (330200.00))
-- case: more 21: SELECT first_name FROM employees GROUP BY first_name, email HAVING cou
-- expect: hidden_column
SELECT first_name FROM employees GROUP BY first_name, email HAVING count(*) > 0
-- case: more 22: SELECT first_name FROM employees JOIN (SELECT 330200.00 AS salary) s U
-- expect: hidden_column
SELECT first_name FROM employees JOIN (SELECT 330200.00 AS salary) s USING (salary)
-- case: more 23: SELECT first_name FROM employees NATURAL JOIN (SELECT 330200.00 AS sal
-- expect: hidden_column
SELECT first_name FROM employees NATURAL JOIN (SELECT 330200.00 AS salary) s
-- case: more 24: SELECT first_name FROM employees ORDER BY ROW(salary)
-- expect: hidden_column
SELECT first_name FROM employees ORDER BY ROW(salary)
-- case: more 25: SELECT first_name FROM employees WHERE (SELECT salary FROM (SELECT 1 A
-- expect: hidden_column
SELECT first_name FROM employees WHERE (SELECT salary FROM (SELECT 1 AS x) q) > 0
-- case: more 26: SELECT first_name FROM employees WHERE (employees.*) IS NOT NULL
-- expect: hidden_column
SELECT first_name FROM employees WHERE (employees.*) IS NOT NULL
-- case: more 27: SELECT first_name FROM employees WHERE (salary > 1) IS NOT FALSE
-- expect: hidden_column
SELECT first_name FROM employees WHERE (salary > 1) IS NOT FALSE
-- case: more 28: SELECT first_name FROM employees WHERE CURRENT_DATE > hire_date + (sal
-- expect: hidden_column
SELECT first_name FROM employees WHERE CURRENT_DATE > hire_date + (salary::int || ' days')::interval
-- case: more 29: SELECT first_name FROM employees WHERE JSON_EXISTS(jsonb_build_object(
-- expect: hidden_column
SELECT first_name FROM employees WHERE JSON_EXISTS(jsonb_build_object('s', salary), '$.s ? (@ > 300000)')
-- case: more 30: SELECT first_name FROM employees WHERE demo.public.employees.salary > 
-- expect: hidden_column
SELECT first_name FROM employees WHERE demo.public.employees.salary > 0
-- case: more 31: SELECT first_name FROM employees WHERE email IS JSON OBJECT
-- expect: hidden_column
SELECT first_name FROM employees WHERE email IS JSON OBJECT
-- case: more 32: SELECT first_name FROM employees WHERE email IS NORMALIZED
-- expect: hidden_column
SELECT first_name FROM employees WHERE email IS NORMALIZED
-- case: more 33: SELECT first_name FROM employees WHERE employees.salary > 0 AND EXISTS
-- expect: hidden_column
SELECT first_name FROM employees WHERE employees.salary > 0 AND EXISTS (SELECT 1)
-- case: more 34: SELECT first_name FROM employees WHERE length(salary::text) = 9
-- expect: hidden_column
SELECT first_name FROM employees WHERE length(salary::text) = 9
-- case: more 35: SELECT first_name FROM employees WHERE salary OPERATOR(pg_catalog.>) 1
-- expect: hidden_column
SELECT first_name FROM employees WHERE salary OPERATOR(pg_catalog.>) 1
-- case: more 36: SELECT first_name FROM employees e FULL JOIN (SELECT 330200.00 AS x) s
-- expect: hidden_column
SELECT first_name FROM employees e FULL JOIN (SELECT 330200.00 AS x) s ON s.x = e.salary
-- case: more 37: SELECT first_name FROM employees e ORDER BY (e.salary, 1)
-- expect: hidden_column
SELECT first_name FROM employees e ORDER BY (e.salary, 1)
-- case: more 38: SELECT first_name FROM employees e WHERE (SELECT e.salary > 300000)
-- expect: hidden_column
SELECT first_name FROM employees e WHERE (SELECT e.salary > 300000)
-- case: more 39: SELECT first_name FROM employees e WHERE EXISTS (SELECT FROM regions r
-- expect: hidden_column
SELECT first_name FROM employees e WHERE EXISTS (SELECT FROM regions r WHERE r.region_id::numeric = e.salary)
-- case: more 40: SELECT first_name FROM employees e WHERE e.salary::text ~ '^3'
-- expect: hidden_column
SELECT first_name FROM employees e WHERE e.salary::text ~ '^3'
-- case: more 41: SELECT first_name FROM employees e WHERE e::text LIKE '%330%'
-- expect: hidden_column
SELECT first_name FROM employees e WHERE e::text LIKE '%330%'
-- case: more 42: SELECT first_name FROM employees e, LATERAL (SELECT * FROM (SELECT e.s
-- expect: hidden_column
SELECT first_name FROM employees e, LATERAL (SELECT * FROM (SELECT e.salary) a) b
-- case: more 43: SELECT first_name, GROUPING(email) FROM employees GROUP BY ROLLUP (fir
-- expect: hidden_column
SELECT first_name, GROUPING(email) FROM employees GROUP BY ROLLUP (first_name, email)
-- case: more 44: SELECT jsonb_agg(x) FROM (SELECT first_name, email FROM employees) x
-- expect: hidden_column
SELECT jsonb_agg(x) FROM (SELECT first_name, email FROM employees) x
-- case: more 45: SELECT to_jsonb(x) FROM (SELECT salary FROM employees) x
-- expect: hidden_column
SELECT to_jsonb(x) FROM (SELECT salary FROM employees) x
-- case: more 46: SELECT x FROM (SELECT salary FROM employees) x
-- expect: hidden_column
SELECT x FROM (SELECT salary FROM employees) x
-- case: row type of a hidden table (passed before)
-- expect: hidden_table
-- policy: {"hidden_tables": ["employees"]}
SELECT * FROM jsonb_populate_record(NULL::employees, '{}')
