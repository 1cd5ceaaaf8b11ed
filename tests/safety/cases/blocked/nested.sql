-- case: data-modifying cte delete
-- expect: data_modifying_cte
WITH d AS (DELETE FROM orders RETURNING *) SELECT * FROM d
-- case: data-modifying cte insert
-- expect: data_modifying_cte
WITH i AS (INSERT INTO audit VALUES (1) RETURNING id) SELECT id FROM i
-- case: data-modifying cte update nested in a cte
-- expect: data_modifying_cte
WITH a AS (SELECT 1), b AS (UPDATE orders SET amount = 0 RETURNING id) SELECT * FROM a, b WHERE a = b.id
-- case: data-modifying cte inside a subquery
-- expect: data_modifying_cte
SELECT * FROM (WITH d AS (DELETE FROM orders RETURNING id) SELECT id FROM d) s
-- case: select into
-- expect: select_into
SELECT * INTO copy_of_orders FROM orders
-- case: select into temp
-- expect: select_into
SELECT id INTO TEMP t FROM orders
-- case: for update
-- expect: locking_clause
SELECT * FROM orders FOR UPDATE
-- case: for share
-- expect: locking_clause
SELECT * FROM orders FOR SHARE
-- case: for no key update nowait
-- expect: locking_clause
SELECT id FROM orders FOR NO KEY UPDATE NOWAIT
-- case: for key share skip locked
-- expect: locking_clause
SELECT id FROM orders FOR KEY SHARE SKIP LOCKED
-- case: for update in subquery
-- expect: locking_clause
SELECT * FROM (SELECT id FROM orders FOR UPDATE) s
-- case: for update in cte
-- expect: locking_clause
WITH l AS (SELECT id FROM orders FOR UPDATE) SELECT * FROM l
-- case: for update in scalar subquery in select list
-- expect: locking_clause
SELECT (SELECT id FROM orders LIMIT 1 FOR UPDATE) AS x
-- case: for update in union arm
-- expect: locking_clause
(SELECT id FROM a FOR UPDATE) UNION SELECT id FROM b
-- case: data-modifying cte under explain
-- expect: data_modifying_cte
EXPLAIN WITH d AS (DELETE FROM orders RETURNING id) SELECT * FROM d
-- case: locking clause under explain
-- expect: locking_clause
EXPLAIN SELECT * FROM orders FOR UPDATE
