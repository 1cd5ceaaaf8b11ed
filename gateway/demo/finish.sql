-- Demo database, part 3 of 3: keys, indexes and statistics, once the data is in.

DROP SCHEMA demo_build CASCADE;

ALTER TABLE employees
    ADD FOREIGN KEY (manager_id) REFERENCES employees (employee_id),
    ADD FOREIGN KEY (region_id) REFERENCES regions (region_id);
ALTER TABLE customers
    ADD FOREIGN KEY (region_id) REFERENCES regions (region_id),
    ADD FOREIGN KEY (account_manager_id) REFERENCES employees (employee_id);
ALTER TABLE products ADD FOREIGN KEY (category_id) REFERENCES categories (category_id);
ALTER TABLE orders
    ADD FOREIGN KEY (customer_id) REFERENCES customers (customer_id),
    ADD FOREIGN KEY (sales_rep_id) REFERENCES employees (employee_id);
ALTER TABLE order_items
    ADD FOREIGN KEY (order_id) REFERENCES orders (order_id),
    ADD FOREIGN KEY (product_id) REFERENCES products (product_id);
ALTER TABLE payments ADD FOREIGN KEY (order_id) REFERENCES orders (order_id);
ALTER TABLE events ADD FOREIGN KEY (customer_id) REFERENCES customers (customer_id);

-- The joins and filters BI questions use most.
CREATE INDEX ON employees (manager_id);
CREATE INDEX ON customers (region_id);
CREATE INDEX ON products (category_id);
CREATE INDEX ON orders (customer_id);
CREATE INDEX ON orders (ordered_at);
CREATE INDEX ON order_items (product_id);
CREATE INDEX ON payments (order_id);
CREATE INDEX ON events (customer_id);
CREATE INDEX ON events (occurred_at);
CREATE INDEX ON events USING gin (payload jsonb_path_ops);
-- Fuzzy lookups of names mentioned in questions ("sonora headphones").
CREATE INDEX ON products USING gin (name gin_trgm_ops);
