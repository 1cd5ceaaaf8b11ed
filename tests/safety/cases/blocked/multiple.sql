-- case: plain second statement
-- expect: multiple_statements
SELECT 1; DROP TABLE x
-- case: trailing statement after a line comment
-- expect: multiple_statements
SELECT 1 -- harmless
; DROP TABLE x
-- case: after a block comment
-- expect: multiple_statements
SELECT 1 /* ; */; DELETE FROM orders
-- case: nested comments hide nothing from postgres
-- expect: multiple_statements
SELECT 1 /* outer /* inner */ still comment */; DROP TABLE x
-- case: dollar quote then statement
-- expect: multiple_statements
SELECT $$ ; $$; DROP TABLE x
-- case: tagged dollar quote containing fake end
-- expect: multiple_statements
SELECT $tag$ $$ ; $tag$; DELETE FROM orders
-- case: escape string with backslash quote
-- expect: multiple_statements
SELECT E'\\'; DROP TABLE x; --'
-- case: standard conforming string ends at the backslash
-- expect: multiple_statements
SELECT 'a\'; DROP TABLE x; --'
-- case: three statements
-- expect: multiple_statements
SELECT 1; SELECT 2; SELECT 3
-- case: two selects
-- expect: multiple_statements
SELECT 1; SELECT 2
-- case: semicolon only between selects in a comment-looking dollar body
-- expect: multiple_statements
SELECT $a$/*$a$; DROP TABLE x; SELECT $b$*/$b$
-- case: unicode escape identifier then statement
-- expect: multiple_statements
SELECT U&"d\0061t\+000061" FROM t; DROP TABLE t
-- case: unterminated nested comment
-- expect: parse_error
SELECT 1 /* /* */ ; DROP TABLE x
