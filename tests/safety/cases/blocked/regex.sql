-- case: backreference with a long subject (issue 10)
-- expect: regex_too_costly
SELECT repeat('b', 40009) ~ '^(bb+)\1+$'
-- case: backreference case-insensitive
-- expect: regex_too_costly
SELECT name FROM customers WHERE name ~* '(a+)\1'
-- case: backreference in a negated match
-- expect: regex_too_costly
SELECT name FROM customers WHERE name !~ '^(.+)\1$'
-- case: backreference in negated case-insensitive match
-- expect: regex_too_costly
SELECT name FROM customers WHERE name !~* '(x)\1'
-- case: backreference through ANY
-- expect: regex_too_costly
SELECT name FROM customers WHERE name ~ ANY (ARRAY['^a', '(b+)\1'])
-- case: backreference in regexp_match
-- expect: regex_too_costly
SELECT regexp_match(name, '(\w+)\s\1') FROM customers
-- case: backreference in regexp_matches
-- expect: regex_too_costly
SELECT regexp_matches(name, '(a|b)\1', 'g') FROM customers
-- case: backreference in regexp_replace pattern
-- expect: regex_too_costly
SELECT regexp_replace(name, '(.)\1+', '\1') FROM customers
-- case: backreference in regexp_like
-- expect: regex_too_costly
SELECT regexp_like(name, '(a)\1') FROM customers
-- case: backreference in regexp_count
-- expect: regex_too_costly
SELECT regexp_count(name, '(a)\1') FROM customers
-- case: backreference in regexp_split_to_table
-- expect: regex_too_costly
SELECT regexp_split_to_table(name, '(,)\1') FROM customers
-- case: backreference in regexp_substr
-- expect: regex_too_costly
SELECT regexp_substr(name, '(a)\1') FROM customers
-- case: backreference in substring from
-- expect: regex_too_costly
SELECT substring(name from '(a)\1') FROM customers
-- case: backreference in SIMILAR TO
-- expect: regex_too_costly
SELECT name FROM customers WHERE name SIMILAR TO '(b+)\1%' ESCAPE ''
-- case: backreference in an escape string
-- expect: regex_too_costly
SELECT name FROM customers WHERE name ~ E'(bb+)\\1+'
-- case: backreference assembled with chr
-- expect: regex_too_costly
SELECT name FROM customers WHERE name ~ ('(bb+)' || chr(92) || '1+')
-- case: backreference in a bracket-looking spot
-- expect: regex_too_costly
SELECT name FROM customers WHERE name ~ '(b)[\1]'
-- case: backreference in jsonpath like_regex
-- expect: regex_too_costly
SELECT jsonb_path_exists(payload, '$.page ? (@ like_regex "(a+)\\1")') FROM events
-- case: backreference in the jsonpath @? operator
-- expect: regex_too_costly
SELECT count(*) FROM events WHERE payload @? '$.page ? (@ like_regex "^(.+)\\1$")'
-- case: nested bounded repetition
-- expect: regex_too_costly
SELECT 'a' ~ '((a{255}){255}){255}'
-- case: two-level bounded repetition
-- expect: regex_too_costly
SELECT name FROM customers WHERE name ~ '(a{100}){100}'
-- case: backreference in a subquery
-- expect: regex_too_costly
SELECT * FROM (SELECT name FROM customers WHERE name ~ '(.)\1') s
-- case: pattern from a column
-- expect: regex_not_constant
SELECT c.name FROM customers c JOIN products p ON c.name ~ p.name
-- case: pattern from a subquery
-- expect: regex_not_constant
SELECT name FROM customers WHERE name ~ (SELECT min(name) FROM products)
-- case: pattern function with a column pattern
-- expect: regex_not_constant
SELECT regexp_replace(name, city, '') FROM customers
-- case: SIMILAR TO a column
-- expect: regex_not_constant
SELECT name FROM customers WHERE name SIMILAR TO city
-- case: pattern concatenated with a column
-- expect: regex_not_constant
SELECT name FROM customers WHERE name ~* ('^' || city)
