-- Demo database, part 1 of 3: tables and their documentation.
-- Primary keys only; foreign keys and indexes are added by finish.sql once the data is in, which is
-- faster than checking every row as it arrives. The comments are read by the gateway's schema
-- introspection and end up in the LLM's prompt, so they say what a value means to the business.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE regions (
    region_id   smallint PRIMARY KEY,
    code        text NOT NULL UNIQUE,
    name        text NOT NULL UNIQUE
);
COMMENT ON TABLE regions IS 'Sales regions. Every customer and every sales employee belongs to exactly one region.';
COMMENT ON COLUMN regions.region_id IS 'Region identifier.';
COMMENT ON COLUMN regions.code IS 'Short region code used in reports, e.g. NA, LATAM, WEU, APAC.';
COMMENT ON COLUMN regions.name IS 'Region name, e.g. North America, Western Europe, Asia Pacific.';

CREATE TABLE employees (
    employee_id integer PRIMARY KEY,
    first_name  text NOT NULL,
    last_name   text NOT NULL,
    email       text NOT NULL UNIQUE,
    job_title   text NOT NULL,
    department  text NOT NULL,
    manager_id  integer,
    region_id   smallint,
    hire_date   date NOT NULL,
    salary      numeric(10, 2) NOT NULL
);
COMMENT ON TABLE employees IS 'Company staff. manager_id builds the reporting hierarchy: CEO, vice presidents, regional managers, account executives and team members.';
COMMENT ON COLUMN employees.employee_id IS 'Employee identifier.';
COMMENT ON COLUMN employees.first_name IS 'Given name.';
COMMENT ON COLUMN employees.last_name IS 'Family name.';
COMMENT ON COLUMN employees.email IS 'Work e-mail address, unique.';
COMMENT ON COLUMN employees.job_title IS 'Job title, e.g. Account Executive, Regional Sales Manager.';
COMMENT ON COLUMN employees.department IS 'Department: Executive, Sales, Operations or Marketing.';
COMMENT ON COLUMN employees.manager_id IS 'The employee this person reports to (employees.employee_id); NULL only for the CEO.';
COMMENT ON COLUMN employees.region_id IS 'Region a sales employee covers (regions.region_id); NULL for staff without a region.';
COMMENT ON COLUMN employees.hire_date IS 'Date the employee joined the company.';
COMMENT ON COLUMN employees.salary IS 'Annual base salary in USD.';

CREATE TABLE customers (
    customer_id        integer PRIMARY KEY,
    first_name         text NOT NULL,
    last_name          text NOT NULL,
    email              text NOT NULL UNIQUE,
    company_name       text,
    segment            text NOT NULL CHECK (segment IN ('Consumer', 'Small Business', 'Enterprise')),
    city               text NOT NULL,
    country            text NOT NULL,
    region_id          smallint NOT NULL,
    account_manager_id integer,
    signup_date        date NOT NULL,
    is_active          boolean NOT NULL
);
COMMENT ON TABLE customers IS 'Customer accounts, one row per person or business that signed up. Some customers never ordered.';
COMMENT ON COLUMN customers.customer_id IS 'Customer identifier.';
COMMENT ON COLUMN customers.first_name IS 'Given name of the customer or of the business contact.';
COMMENT ON COLUMN customers.last_name IS 'Family name of the customer or of the business contact.';
COMMENT ON COLUMN customers.email IS 'Contact e-mail address, unique.';
COMMENT ON COLUMN customers.company_name IS 'Company name for business customers; NULL for consumers.';
COMMENT ON COLUMN customers.segment IS 'Customer segment: Consumer, Small Business or Enterprise.';
COMMENT ON COLUMN customers.city IS 'City of the billing address.';
COMMENT ON COLUMN customers.country IS 'Country of the billing address (English name, e.g. Germany, United States).';
COMMENT ON COLUMN customers.region_id IS 'Sales region of the customer (regions.region_id), derived from the country.';
COMMENT ON COLUMN customers.account_manager_id IS 'Account executive who manages this business customer (employees.employee_id); NULL for consumers.';
COMMENT ON COLUMN customers.signup_date IS 'Date the customer created the account.';
COMMENT ON COLUMN customers.is_active IS 'False when the account was closed or suspended; closed accounts keep their order history.';

CREATE TABLE categories (
    category_id smallint PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    department  text NOT NULL
);
COMMENT ON TABLE categories IS 'Product categories, grouped into store departments.';
COMMENT ON COLUMN categories.category_id IS 'Category identifier.';
COMMENT ON COLUMN categories.name IS 'Category name, e.g. Audio, Furniture, Books.';
COMMENT ON COLUMN categories.department IS 'Store department the category belongs to: Electronics, Home, Leisure or Office.';

CREATE TABLE products (
    product_id      integer PRIMARY KEY,
    sku             text NOT NULL UNIQUE,
    name            text NOT NULL,
    category_id     smallint NOT NULL,
    brand           text NOT NULL,
    list_price      numeric(10, 2) NOT NULL CHECK (list_price > 0),
    unit_cost       numeric(10, 2) NOT NULL CHECK (unit_cost > 0),
    launched_on     date NOT NULL,
    is_discontinued boolean NOT NULL
);
COMMENT ON TABLE products IS 'Product catalogue. Prices are current list prices; the price actually charged is in order_items.unit_price.';
COMMENT ON COLUMN products.product_id IS 'Product identifier.';
COMMENT ON COLUMN products.sku IS 'Stock keeping unit code, unique, e.g. AUD-0042.';
COMMENT ON COLUMN products.name IS 'Product name as shown in the shop, including the brand.';
COMMENT ON COLUMN products.category_id IS 'Category of the product (categories.category_id).';
COMMENT ON COLUMN products.brand IS 'Brand name.';
COMMENT ON COLUMN products.list_price IS 'Current list price per unit in USD.';
COMMENT ON COLUMN products.unit_cost IS 'Purchase cost per unit in USD; margin = list_price - unit_cost.';
COMMENT ON COLUMN products.launched_on IS 'Date the product was first offered.';
COMMENT ON COLUMN products.is_discontinued IS 'True when the product can no longer be ordered; past orders remain.';

CREATE TABLE orders (
    order_id      integer PRIMARY KEY,
    customer_id   integer NOT NULL,
    sales_rep_id  integer,
    ordered_at    timestamp NOT NULL,
    status        text NOT NULL
                  CHECK (status IN ('pending', 'processing', 'shipped', 'delivered', 'cancelled', 'returned')),
    channel       text NOT NULL CHECK (channel IN ('web', 'mobile', 'phone', 'partner')),
    discount_code text,
    shipping_fee  numeric(8, 2) NOT NULL,
    total_amount  numeric(12, 2) NOT NULL,
    shipped_at    timestamp,
    delivered_at  timestamp
);
COMMENT ON TABLE orders IS 'Customer orders from January 2023 to December 2024, one row per order. Revenue normally excludes cancelled orders.';
COMMENT ON COLUMN orders.order_id IS 'Order identifier; increases with ordered_at.';
COMMENT ON COLUMN orders.customer_id IS 'Customer who placed the order (customers.customer_id).';
COMMENT ON COLUMN orders.sales_rep_id IS 'Employee credited with the sale (employees.employee_id); set for phone and partner orders only.';
COMMENT ON COLUMN orders.ordered_at IS 'When the order was placed (UTC, no time zone).';
COMMENT ON COLUMN orders.status IS 'Fulfilment status: pending, processing, shipped, delivered, cancelled (never shipped, not charged) or returned (shipped, then refunded).';
COMMENT ON COLUMN orders.channel IS 'Sales channel: web, mobile (app), phone or partner (reseller).';
COMMENT ON COLUMN orders.discount_code IS 'Promotion code applied to the order, e.g. WELCOME10; NULL when none.';
COMMENT ON COLUMN orders.shipping_fee IS 'Shipping fee charged in USD.';
COMMENT ON COLUMN orders.total_amount IS 'Amount charged in USD: sum of the order lines after discounts, plus the shipping fee.';
COMMENT ON COLUMN orders.shipped_at IS 'When the order left the warehouse; NULL if not shipped yet or cancelled.';
COMMENT ON COLUMN orders.delivered_at IS 'When the order was delivered; NULL if not delivered.';

CREATE TABLE order_items (
    order_id     integer NOT NULL,
    line_no      smallint NOT NULL,
    product_id   integer NOT NULL,
    quantity     integer NOT NULL CHECK (quantity > 0),
    unit_price   numeric(10, 2) NOT NULL,
    discount_pct numeric(4, 2) NOT NULL CHECK (discount_pct >= 0 AND discount_pct < 1),
    PRIMARY KEY (order_id, line_no)
);
COMMENT ON TABLE order_items IS 'Order lines: which products an order contains, in what quantity and at what price.';
COMMENT ON COLUMN order_items.order_id IS 'Order this line belongs to (orders.order_id).';
COMMENT ON COLUMN order_items.line_no IS 'Line number within the order, starting at 1.';
COMMENT ON COLUMN order_items.product_id IS 'Product ordered (products.product_id).';
COMMENT ON COLUMN order_items.quantity IS 'Number of units ordered.';
COMMENT ON COLUMN order_items.unit_price IS 'Price per unit in USD at the time of the order, before the discount.';
COMMENT ON COLUMN order_items.discount_pct IS 'Discount as a fraction of the price (0.10 = 10 %); line revenue = quantity * unit_price * (1 - discount_pct).';

CREATE TABLE payments (
    payment_id integer PRIMARY KEY,
    order_id   integer NOT NULL,
    paid_at    timestamp NOT NULL,
    amount     numeric(12, 2) NOT NULL CHECK (amount > 0),
    method     text NOT NULL CHECK (method IN ('card', 'paypal', 'bank_transfer', 'gift_card', 'apple_pay')),
    status     text NOT NULL CHECK (status IN ('captured', 'failed', 'refunded'))
);
COMMENT ON TABLE payments IS 'Payment transactions. A paid order has one captured payment, possibly after failed attempts; a returned order also has a refund.';
COMMENT ON COLUMN payments.payment_id IS 'Payment identifier.';
COMMENT ON COLUMN payments.order_id IS 'Order being paid (orders.order_id).';
COMMENT ON COLUMN payments.paid_at IS 'When the transaction was processed (UTC, no time zone).';
COMMENT ON COLUMN payments.amount IS 'Transaction amount in USD, always positive; for refunds it is the amount given back.';
COMMENT ON COLUMN payments.method IS 'Payment method: card, paypal, bank_transfer, gift_card or apple_pay.';
COMMENT ON COLUMN payments.status IS 'captured (money received), failed (declined, no money moved) or refunded (money returned to the customer).';

CREATE TABLE events (
    event_id    bigint PRIMARY KEY,
    occurred_at timestamp NOT NULL,
    customer_id integer,
    session_id  uuid NOT NULL,
    event_type  text NOT NULL CHECK (event_type IN ('page_view', 'click', 'search', 'add_to_cart', 'signup')),
    payload     jsonb NOT NULL
);
COMMENT ON TABLE events IS 'Web and app analytics events from the shop front end, 2023 to 2024.';
COMMENT ON COLUMN events.event_id IS 'Event identifier; increases with occurred_at.';
COMMENT ON COLUMN events.occurred_at IS 'When the event happened (UTC, no time zone).';
COMMENT ON COLUMN events.customer_id IS 'Logged-in customer (customers.customer_id); NULL for anonymous visitors.';
COMMENT ON COLUMN events.session_id IS 'Browser or app session the event belongs to.';
COMMENT ON COLUMN events.event_type IS 'Kind of event: page_view, click, search, add_to_cart or signup.';
COMMENT ON COLUMN events.payload IS 'Event details as JSON. Always has device {type, os, browser}; page_view and click have page {path, title} and page_view may have referrer and utm {source, medium, campaign}; click has element {id, text}; search has query and results; add_to_cart has product_id, quantity and price; signup has method, plan and referral_code.';
