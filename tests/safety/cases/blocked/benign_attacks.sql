-- policy-default: {"hidden_columns": ["customers.email", "employees.salary", "employees.email"]}
-- What only looks like a trailing comment, a PG16 literal or a harmless XMLTABLE (see allowed/benign.sql).
-- case: line comment then a newline and a second statement
-- expect: multiple_statements
SELECT count(*) FROM orders; -- done
DROP TABLE orders
-- case: ;-- inside a string is no comment
-- expect: multiple_statements
SELECT ';--'; DROP TABLE orders
-- case: ;-- inside a dollar quote is no comment
-- expect: multiple_statements
SELECT $$;--$$; DROP TABLE orders
-- case: block comment closed early
-- expect: multiple_statements
SELECT 1; /* done */ DROP TABLE orders; /* */
-- case: nested block comment closed once is still open, then closed: statement after it
-- expect: multiple_statements
SELECT 1; /* a /* b */ c */ DELETE FROM orders
-- case: double underscore in a literal
-- expect: parse_error
SELECT 1__0
-- case: trailing underscore in a literal
-- expect: parse_error
SELECT 1_
-- case: literal glued to a name
-- expect: parse_error
SELECT 0x1Fsalary FROM employees
-- case: hidden column through XMLTABLE PASSING
-- expect: hidden_column
SELECT x.v FROM employees e, XMLTABLE('/a' PASSING xmlelement(name a, e.salary) COLUMNS v text PATH '.') AS x
-- case: hidden column through XMLTABLE BY REF
-- expect: hidden_column
SELECT x.v FROM customers c, XMLTABLE('/a' PASSING BY REF xmlelement(name a, c.email) BY REF COLUMNS v text PATH '.') AS x
-- case: hidden column in an XMLTABLE column default
-- expect: hidden_column
SELECT x.v FROM employees e, XMLTABLE('/a' PASSING ('<a/>'::xml) COLUMNS n FOR ORDINALITY, v text PATH 'b' DEFAULT e.email::text) AS x
-- case: hidden column as the XMLTABLE row expression
-- expect: hidden_column
SELECT x.v FROM employees e, XMLTABLE(e.email PASSING ('<a/>'::xml) COLUMNS v text PATH '.') AS x
-- case: subquery reading a hidden column inside XMLTABLE
-- expect: hidden_column
SELECT x.v FROM XMLTABLE('/a' PASSING (SELECT xmlagg(xmlelement(name a, salary)) FROM employees) COLUMNS v text PATH '.') AS x
-- case: blocked function inside XMLTABLE
-- expect: function_blocked
SELECT x.v FROM XMLTABLE('/a' PASSING (SELECT query_to_xml('SELECT 1', true, false, '')) COLUMNS v text PATH '.') AS x
-- case: sleep inside XMLTABLE's column path
-- expect: function_blocked
SELECT x.v FROM XMLTABLE('/a' PASSING ('<a/>'::xml) COLUMNS v text PATH (pg_sleep(10)::text)) AS x
-- case: write hidden after a PG16 literal
-- expect: multiple_statements
SELECT 1_000; DELETE FROM orders
