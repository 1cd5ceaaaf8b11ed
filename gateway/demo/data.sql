-- Demo database, part 2 of 3: the data, generated inside Postgres.
-- Every "random" choice is demo_build.rnd(key): md5 of a key that names the row and the attribute, so the
-- data is identical on every machine and every run (random() depends on seeding and on plan order).
-- Only +, -, *, /, sqrt and floor touch floats: they are exactly rounded everywhere, unlike pow or exp.
-- The business calendar ends at 2024-12-31 23:59:59; "now" for statuses is that instant.

CREATE SCHEMA demo_build;

CREATE FUNCTION demo_build.rnd(key text) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT ('x' || substr(md5(key), 1, 13))::bit(52)::bigint / 4503599627370496.0::float8 $$;

CREATE FUNCTION demo_build.pick(items text[], key text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT items[1 + floor(demo_build.rnd(key) * cardinality(items))::int] $$;

-- Skewed towards 0: a few popular customers and products, a long tail (density 3.3x the mean at 0).
CREATE FUNCTION demo_build.skew(r float8) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT 0.3 * r + 0.7 * r * r * r $$;

CREATE TABLE demo_build.names AS SELECT
    ARRAY['James', 'Mary', 'Liam', 'Olivia', 'Noah', 'Emma', 'Lucas', 'Sofia', 'Mateo', 'Mia', 'Hiroshi',
          'Yuki', 'Lena', 'Jonas', 'Camille', 'Louis', 'Chloé', 'Hugo', 'Elena', 'Marco', 'Giulia', 'Luca',
          'Ana', 'Pedro', 'Lucía', 'Diego', 'Ingrid', 'Erik', 'Freya', 'Oskar', 'Aisha', 'Omar', 'Priya',
          'Arjun', 'Mei', 'Wei', 'Sara', 'David', 'Laura', 'Daniel'] AS first_names,
    ARRAY['Smith', 'Johnson', 'Brown', 'Garcia', 'Miller', 'Davis', 'Martinez', 'Lopez', 'Wilson',
          'Anderson', 'Taylor', 'Thomas', 'Moore', 'Martin', 'Lee', 'Clark', 'Lewis', 'Walker', 'Young',
          'King', 'Müller', 'Schmidt', 'Schneider', 'Fischer', 'Weber', 'Dubois', 'Moreau', 'Laurent',
          'Rossi', 'Russo', 'Bianchi', 'Silva', 'Santos', 'Fernández', 'González', 'Johansson', 'Nielsen',
          'Tanaka', 'Suzuki', 'Kim'] AS last_names,
    ARRAY['Bluebird', 'Northwind', 'Summit', 'Redwood', 'Harbor', 'Silverline', 'Granite', 'Brightpath',
          'Evergreen', 'Ironclad', 'Lakeside', 'Oakmont', 'Pioneer', 'Sunrise', 'Keystone', 'Atlas',
          'Cobalt', 'Meridian', 'Nimbus', 'Vertex'] AS company_words,
    ARRAY['Logistics', 'Consulting', 'Studios', 'Labs', 'Retail', 'Health', 'Foods', 'Systems',
          'Architects', 'Dental', 'Legal', 'Media'] AS industries,
    ARRAY['Ltd', 'Inc', 'GmbH', 'LLC', 'Group', 'SA', 'AB', 'BV'] AS legal_forms;

-- Where customers live: city, country, region, and the share of customers (weights add up to 1000).
CREATE TABLE demo_build.places (place_no int, city text, country text, region_code text, weight int);
INSERT INTO demo_build.places VALUES
    (1, 'New York', 'United States', 'NA', 90), (2, 'San Francisco', 'United States', 'NA', 60),
    (3, 'Chicago', 'United States', 'NA', 50), (4, 'Austin', 'United States', 'NA', 40),
    (5, 'Seattle', 'United States', 'NA', 40), (6, 'Toronto', 'Canada', 'NA', 40),
    (7, 'Vancouver', 'Canada', 'NA', 20),
    (8, 'São Paulo', 'Brazil', 'LATAM', 35), (9, 'Mexico City', 'Mexico', 'LATAM', 30),
    (10, 'Buenos Aires', 'Argentina', 'LATAM', 15), (11, 'Bogotá', 'Colombia', 'LATAM', 10),
    (12, 'Santiago', 'Chile', 'LATAM', 10),
    (13, 'London', 'United Kingdom', 'WEU', 70), (14, 'Manchester', 'United Kingdom', 'WEU', 20),
    (15, 'Paris', 'France', 'WEU', 45), (16, 'Lyon', 'France', 'WEU', 15),
    (17, 'Amsterdam', 'Netherlands', 'WEU', 25), (18, 'Brussels', 'Belgium', 'WEU', 15),
    (19, 'Dublin', 'Ireland', 'WEU', 15),
    (20, 'Berlin', 'Germany', 'CEU', 45), (21, 'Munich', 'Germany', 'CEU', 30),
    (22, 'Hamburg', 'Germany', 'CEU', 20), (23, 'Vienna', 'Austria', 'CEU', 15),
    (24, 'Zurich', 'Switzerland', 'CEU', 15), (25, 'Warsaw', 'Poland', 'CEU', 15),
    (26, 'Prague', 'Czechia', 'CEU', 10),
    (27, 'Stockholm', 'Sweden', 'NEU', 20), (28, 'Copenhagen', 'Denmark', 'NEU', 15),
    (29, 'Oslo', 'Norway', 'NEU', 10), (30, 'Helsinki', 'Finland', 'NEU', 10),
    (31, 'Madrid', 'Spain', 'SEU', 25), (32, 'Barcelona', 'Spain', 'SEU', 20),
    (33, 'Lisbon', 'Portugal', 'SEU', 10), (34, 'Milan', 'Italy', 'SEU', 20),
    (35, 'Rome', 'Italy', 'SEU', 10), (36, 'Athens', 'Greece', 'SEU', 5),
    (37, 'Tokyo', 'Japan', 'APAC', 40), (38, 'Osaka', 'Japan', 'APAC', 15),
    (39, 'Singapore', 'Singapore', 'APAC', 20), (40, 'Sydney', 'Australia', 'APAC', 25),
    (41, 'Melbourne', 'Australia', 'APAC', 15), (42, 'Seoul', 'South Korea', 'APAC', 15),
    (43, 'Auckland', 'New Zealand', 'APAC', 5);
ALTER TABLE demo_build.places ADD COLUMN lo int, ADD COLUMN hi int;
UPDATE demo_build.places p SET lo = c.hi - p.weight, hi = c.hi
FROM (SELECT place_no, sum(weight) OVER (ORDER BY place_no) AS hi FROM demo_build.places) c
WHERE c.place_no = p.place_no;

INSERT INTO regions (region_id, code, name) VALUES
    (1, 'NA', 'North America'), (2, 'LATAM', 'Latin America'), (3, 'WEU', 'Western Europe'),
    (4, 'CEU', 'Central Europe'), (5, 'NEU', 'Northern Europe'), (6, 'SEU', 'Southern Europe'),
    (7, 'APAC', 'Asia Pacific');

-- Four levels: CEO (1) -> VPs (2-4) -> regional sales managers (5-11, one per region) and operations
-- managers (47, 48) -> account executives (12-46, five per region) and team members (49-60).
INSERT INTO employees
SELECT e.id, e.first_name, e.last_name,
       lower(translate(e.first_name || '.' || e.last_name, 'éüáíó', 'euaio')) || e.id || '@company.example',
       e.title, e.dept, e.manager_id, e.region_id,
       date '2015-01-05' + e.hired_from + floor(demo_build.rnd('emp:hired:' || e.id) * e.hire_window)::int,
       round(e.base * (0.9 + 0.2 * demo_build.rnd('emp:salary:' || e.id))::numeric / 100) * 100
FROM (
    SELECT id,
           demo_build.pick(n.first_names, 'emp:first:' || id) AS first_name,
           demo_build.pick(n.last_names, 'emp:last:' || id) AS last_name,
           t.*
    FROM generate_series(1, 60) AS id, demo_build.names n,
    LATERAL (SELECT
        CASE WHEN id = 1 THEN 'Chief Executive Officer' WHEN id = 2 THEN 'VP Sales'
             WHEN id = 3 THEN 'VP Operations' WHEN id = 4 THEN 'VP Marketing'
             WHEN id <= 11 THEN 'Regional Sales Manager' WHEN id <= 46 THEN 'Account Executive'
             WHEN id = 47 THEN 'Fulfilment Manager' WHEN id = 48 THEN 'Customer Support Manager'
             WHEN id <= 52 THEN 'Warehouse Coordinator' WHEN id <= 56 THEN 'Support Specialist'
             ELSE 'Marketing Specialist' END AS title,
        CASE WHEN id = 1 THEN 'Executive' WHEN id = 2 OR id BETWEEN 5 AND 46 THEN 'Sales'
             WHEN id = 3 OR id BETWEEN 47 AND 56 THEN 'Operations' ELSE 'Marketing' END AS dept,
        CASE WHEN id = 1 THEN NULL WHEN id <= 4 THEN 1 WHEN id <= 11 THEN 2 WHEN id <= 46 THEN 4 + 1 + (id - 12) / 5
             WHEN id <= 48 THEN 3 WHEN id <= 52 THEN 47 WHEN id <= 56 THEN 48 ELSE 4 END AS manager_id,
        CASE WHEN id BETWEEN 5 AND 11 THEN id - 4 WHEN id BETWEEN 12 AND 46 THEN 1 + (id - 12) / 5 END::smallint
            AS region_id,
        CASE WHEN id = 1 THEN 0 WHEN id <= 4 THEN 365 WHEN id <= 11 OR id IN (47, 48) THEN 1100 ELSE 1500 END
            AS hired_from,
        CASE WHEN id = 1 THEN 30 WHEN id <= 4 THEN 700 WHEN id <= 11 OR id IN (47, 48) THEN 700 ELSE 2200 END
            AS hire_window,
        CASE WHEN id = 1 THEN 320000 WHEN id <= 4 THEN 210000 WHEN id <= 11 THEN 150000
             WHEN id <= 46 THEN 95000 WHEN id <= 48 THEN 120000 ELSE 68000 END AS base
    ) t
) e;

INSERT INTO customers
SELECT c.id, c.first_name, c.last_name,
       lower(translate(c.first_name || '.' || c.last_name, 'éüáíó', 'euaio')) || c.id || '@example.com',
       CASE WHEN c.segment <> 'Consumer' THEN
           demo_build.pick(n.company_words, 'cust:co1:' || c.id) || ' '
           || demo_build.pick(n.industries, 'cust:co2:' || c.id) || ' '
           || demo_build.pick(n.legal_forms, 'cust:co3:' || c.id) END,
       c.segment, p.city, p.country, r.region_id,
       CASE WHEN c.segment <> 'Consumer' THEN 12 + (r.region_id - 1) * 5
           + floor(demo_build.rnd('cust:am:' || c.id) * 5)::int END,
       date '2021-01-01' + floor(sqrt(demo_build.rnd('cust:signup:' || c.id)) * 1430)::int,
       demo_build.rnd('cust:active:' || c.id) >= 0.06
FROM (
    SELECT id,
           demo_build.pick(n.first_names, 'cust:first:' || id) AS first_name,
           demo_build.pick(n.last_names, 'cust:last:' || id) AS last_name,
           CASE WHEN demo_build.rnd('cust:segment:' || id) < 0.6 THEN 'Consumer'
                WHEN demo_build.rnd('cust:segment:' || id) < 0.9 THEN 'Small Business'
                ELSE 'Enterprise' END AS segment,
           floor(demo_build.rnd('cust:place:' || id) * 1000)::int AS place_pick
    FROM generate_series(1, 2000) AS id, demo_build.names n
) c
CROSS JOIN demo_build.names n
JOIN demo_build.places p ON c.place_pick >= p.lo AND c.place_pick < p.hi
JOIN regions r ON r.code = p.region_code;

-- Product names: brand + one of four variants + one of five nouns of the category = 20 per category.
CREATE TABLE demo_build.catalogue (category_id smallint, name text, department text, code text,
                                   nouns text[], brands text[], price_lo numeric, price_hi numeric);
INSERT INTO demo_build.catalogue VALUES
    (1, 'Audio', 'Electronics', 'AUD', ARRAY['Wireless Headphones', 'Earbuds', 'Bluetooth Speaker', 'Soundbar', 'Turntable'],
        ARRAY['Sonora', 'Aurex', 'Bassline'], 29, 449),
    (2, 'Computers', 'Electronics', 'CMP', ARRAY['Laptop', 'Monitor', 'Mechanical Keyboard', 'Wireless Mouse', 'Docking Station'],
        ARRAY['Lumen', 'Keystack', 'Novabyte'], 19, 1899),
    (3, 'Phones & Tablets', 'Electronics', 'PHN', ARRAY['Smartphone', 'Tablet', 'Phone Case', 'Charger', 'Screen Protector'],
        ARRAY['Pixelon', 'Orbit', 'Zentek'], 9, 1199),
    (4, 'Kitchen', 'Home', 'KIT', ARRAY['Espresso Machine', 'Blender', 'Chef Knife', 'Cookware Set', 'Kettle'],
        ARRAY['Casa Nova', 'Ferro', 'Hearth'], 19, 699),
    (5, 'Furniture', 'Home', 'FUR', ARRAY['Office Chair', 'Standing Desk', 'Bookshelf', 'Sofa', 'Side Table'],
        ARRAY['Nordhaus', 'Oakline', 'Loft & Co'], 59, 1499),
    (6, 'Sports & Outdoors', 'Leisure', 'SPO', ARRAY['Running Shoes', 'Yoga Mat', 'Tent', 'Backpack', 'Water Bottle'],
        ARRAY['Trailpeak', 'Stride', 'Alpenglow'], 12, 399),
    (7, 'Toys & Games', 'Leisure', 'TOY', ARRAY['Building Set', 'Board Game', 'Puzzle', 'RC Car', 'Plush Toy'],
        ARRAY['Playforge', 'Tinker Town', 'Meeple'], 9, 149),
    (8, 'Books', 'Leisure', 'BOK', ARRAY['Cookbook', 'Novel', 'Travel Guide', 'Data Science Handbook', 'Atlas'],
        ARRAY['Penwright', 'Folio Press', 'Inkwell'], 8, 69),
    (9, 'Beauty', 'Home', 'BEA', ARRAY['Face Cream', 'Hair Dryer', 'Perfume', 'Electric Toothbrush', 'Shampoo'],
        ARRAY['Lumiere', 'Verde', 'Aurelia'], 6, 189),
    (10, 'Office Supplies', 'Office', 'OFF', ARRAY['Notebook', 'Fountain Pen', 'Desk Lamp', 'Label Printer', 'Paper Shredder'],
        ARRAY['Scriba', 'Deskwise', 'Paperlane'], 4, 249);

INSERT INTO categories SELECT category_id, name, department FROM demo_build.catalogue;

INSERT INTO products
SELECT p.id,
       k.code || '-' || lpad(p.id::text, 4, '0'),
       p.brand || ' ' || (ARRAY['Classic', 'Pro', 'Lite', 'Max'])[1 + p.slot / 5] || ' ' || k.nouns[1 + p.slot % 5],
       k.category_id, p.brand, p.price,
       round(p.price * (0.35 + 0.3 * demo_build.rnd('prod:cost:' || p.id))::numeric, 2),
       date '2019-01-01' + floor(demo_build.rnd('prod:launch:' || p.id) * 1460)::int,
       demo_build.rnd('prod:disc:' || p.id) < 0.07
FROM (
    SELECT id, (id - 1) / 20 + 1 AS category_id, (id - 1) % 20 AS slot,
           demo_build.pick(c.brands, 'prod:brand:' || id) AS brand,
           -- Prices end in .99 or .49, spread between the category's bounds, most near the bottom.
           floor(c.price_lo + (c.price_hi - c.price_lo) * demo_build.rnd('prod:price:' || id)::numeric
                 * demo_build.rnd('prod:price2:' || id)::numeric)
               + (ARRAY[0.99, 0.49])[1 + floor(demo_build.rnd('prod:cents:' || id) * 2)::int] AS price
    FROM generate_series(1, 200) AS id
    JOIN demo_build.catalogue c ON c.category_id = (id - 1) / 20 + 1
) p
JOIN demo_build.catalogue k ON k.category_id = p.category_id;

-- Customers who ever order: 90 %, and only those who signed up before December 2024. Numbered by the
-- moment they could first order, so "who could order at time t" is a prefix of this numbering.
CREATE TABLE demo_build.buyers AS
SELECT row_number() OVER (ORDER BY greatest(signup_date, date '2023-01-01'), customer_id) - 1 AS n,
       customer_id, segment, region_id, account_manager_id,
       greatest(signup_date, date '2023-01-01')::timestamp AS first_possible,
       demo_build.rnd('cust:propensity:' || customer_id) AS propensity
FROM customers
WHERE demo_build.rnd('cust:buyer:' || customer_id) >= 0.1 AND signup_date < date '2024-12-01';
CREATE INDEX ON demo_build.buyers (first_possible, n);
CREATE UNIQUE INDEX ON demo_build.buyers (n);
ANALYZE demo_build.buyers;

-- Orders, drawn in generation order g, numbered afterwards by time so that order_id follows ordered_at.
-- The time comes first (traffic doubles over the two years, plus a holiday peak from mid-November);
-- then the customer: the likelier of two drawn among those signed up by then.
CREATE TABLE demo_build.orders AS
WITH drawn AS (
    SELECT g,
           CASE WHEN demo_build.rnd('ord:holiday:' || g) < 0.08
                THEN CASE WHEN demo_build.rnd('ord:year:' || g) < 0.45 THEN timestamp '2023-11-15'
                          ELSE timestamp '2024-11-15' END
                     + floor(demo_build.rnd('ord:when:' || g) * 47 * 86400) * interval '1 second'
                -- inverse of the distribution function of a density rising linearly from 1 to 2
                ELSE timestamp '2023-01-01'
                     + floor((sqrt(1 + 3 * demo_build.rnd('ord:when:' || g)) - 1) * 63158400) * interval '1 second'
           END AS ordered_at,
           demo_build.rnd('ord:channel:' || g) AS r_channel,
           demo_build.rnd('ord:status:' || g) AS r_status
    FROM generate_series(1, 20000) AS g
), eligible AS (
    -- n follows first_possible, so the last buyer by time gives the count (one index probe per order).
    SELECT d.*, (SELECT n + 1 FROM demo_build.buyers b WHERE b.first_possible <= d.ordered_at
                 ORDER BY first_possible DESC, n DESC LIMIT 1) AS n_eligible
    FROM drawn d
), chosen AS (
    SELECT e.g, e.ordered_at, e.r_channel, e.r_status,
           CASE WHEN b1.propensity >= b2.propensity THEN b1.customer_id ELSE b2.customer_id END AS customer_id
    FROM eligible e
    JOIN demo_build.buyers b1 ON b1.n = floor(demo_build.rnd('ord:cust1:' || e.g) * e.n_eligible)
    JOIN demo_build.buyers b2 ON b2.n = floor(demo_build.rnd('ord:cust2:' || e.g) * e.n_eligible)
), classified AS (
    SELECT c.*, b.segment, b.region_id, b.account_manager_id,
           CASE WHEN r_channel < 0.55 THEN 'web' WHEN r_channel < 0.85 THEN 'mobile'
                WHEN r_channel < 0.95 THEN 'phone' ELSE 'partner' END AS channel,
           CASE WHEN r_status < 0.05 THEN 'cancelled'
                WHEN ordered_at > timestamp '2024-12-30' THEN 'pending'
                WHEN ordered_at > timestamp '2024-12-28' THEN 'processing'
                WHEN ordered_at > timestamp '2024-12-18' THEN 'shipped'
                WHEN r_status < 0.085 THEN 'returned' ELSE 'delivered' END AS status
    FROM chosen c
    JOIN demo_build.buyers b USING (customer_id)
)
SELECT row_number() OVER (ORDER BY ordered_at, g)::int AS order_id, c.*,
       CASE WHEN channel IN ('phone', 'partner') THEN coalesce(account_manager_id,
           12 + (region_id - 1) * 5 + floor(demo_build.rnd('ord:rep:' || g) * 5)::int) END AS sales_rep_id,
       CASE WHEN demo_build.rnd('ord:code:' || g) < 0.12 THEN
           demo_build.pick(ARRAY['WELCOME10', 'SPRING15', 'SUMMER20', 'BLACKFRIDAY25', 'LOYALTY5'], 'ord:codename:' || g)
       END AS discount_code,
       CASE WHEN channel = 'partner' OR demo_build.rnd('ord:ship:' || g) < 0.35 THEN 0
            ELSE (ARRAY[4.99, 7.99, 12.50])[1 + floor(demo_build.rnd('ord:shipfee:' || g) * 3)::int] END AS shipping_fee,
       CASE WHEN status IN ('shipped', 'delivered', 'returned') THEN ordered_at + interval '6 hours'
           + floor(demo_build.rnd('ord:shipped:' || g) * 259200) * interval '1 second' END AS shipped_at
FROM classified c;

INSERT INTO order_items
SELECT o.order_id, l.line_no, 1 + (l.base + (l.line_no - 1) * l.step) % 200 AS product_id,
       CASE WHEN l.r_qty < 0.70 THEN 1 WHEN l.r_qty < 0.88 THEN 2 WHEN l.r_qty < 0.96 THEN 3
            ELSE 4 + floor(demo_build.rnd('item:qty2:' || o.order_id || ':' || l.line_no) * 7)::int END
           * CASE WHEN o.segment = 'Enterprise' THEN 5 ELSE 1 END,
       -- 2023 prices were 5 % below today's list prices.
       round(p.list_price * CASE WHEN o.ordered_at < timestamp '2024-01-01' THEN 0.95 ELSE 1 END, 2),
       CASE o.discount_code WHEN 'WELCOME10' THEN 0.10 WHEN 'SPRING15' THEN 0.15 WHEN 'SUMMER20' THEN 0.20
            WHEN 'BLACKFRIDAY25' THEN 0.25 WHEN 'LOYALTY5' THEN 0.05 ELSE 0 END
FROM demo_build.orders o
CROSS JOIN LATERAL (
    SELECT line_no,
           -- Popular products are spread over the catalogue: x -> 73x + 11 permutes 0..199.
           (floor(demo_build.skew(demo_build.rnd('item:prod:' || o.order_id)) * 200)::int * 73 + 11) % 200 AS base,
           -- An odd step not divisible by 5 is coprime with 200, so the lines of an order differ.
           (21 + 2 * floor(demo_build.rnd('item:step:' || o.order_id) * 90)::int) AS step0,
           demo_build.rnd('item:qty:' || o.order_id || ':' || line_no) AS r_qty
    FROM generate_series(1, 1 + floor(5 * demo_build.rnd('item:n:' || o.order_id)
                                          * sqrt(demo_build.rnd('item:n:' || o.order_id)))::int) AS line_no
) l0
CROSS JOIN LATERAL (SELECT l0.*, CASE WHEN l0.step0 % 5 = 0 THEN l0.step0 + 2 ELSE l0.step0 END AS step) l
JOIN products p ON p.product_id = 1 + (l.base + (l.line_no - 1) * l.step) % 200;

INSERT INTO orders
SELECT o.order_id, o.customer_id, o.sales_rep_id, o.ordered_at, o.status, o.channel, o.discount_code,
       o.shipping_fee, s.lines + o.shipping_fee, o.shipped_at,
       CASE WHEN o.status IN ('delivered', 'returned') THEN o.shipped_at + interval '1 day'
           + floor(demo_build.rnd('ord:delivered:' || o.g) * 432000) * interval '1 second' END
FROM demo_build.orders o
JOIN (SELECT order_id, round(sum(quantity * unit_price * (1 - discount_pct)), 2) AS lines
      FROM order_items GROUP BY order_id) s ON s.order_id = o.order_id;

-- Payments: one captured payment per paid order (not cancelled, not pending), sometimes after a declined
-- card; some cancelled orders were cancelled after a declined card; returned orders get a refund.
INSERT INTO payments
SELECT row_number() OVER (ORDER BY paid_at, order_id, kind)::int, order_id, paid_at, amount, method, status
FROM (
    SELECT o.order_id, 1 AS kind,
           o.ordered_at + (20 + floor(demo_build.rnd('pay:failat:' || o.order_id) * 100)) * interval '1 second'
               AS paid_at,
           o.total_amount AS amount, 'card' AS method, 'failed' AS status
    FROM orders o
    WHERE demo_build.rnd('pay:fail:' || o.order_id) < CASE o.status WHEN 'cancelled' THEN 0.3 WHEN 'pending' THEN 0
                                                               ELSE 0.06 END
    UNION ALL
    SELECT o.order_id, 2,
           o.ordered_at + CASE WHEN demo_build.rnd('pay:fail:' || o.order_id) < 0.06
                               THEN 300 + floor(demo_build.rnd('pay:at:' || o.order_id) * 1500)
                               ELSE 20 + floor(demo_build.rnd('pay:at:' || o.order_id) * 280) END
               * interval '1 second',
           o.total_amount, m.method, 'captured'
    FROM orders o
    JOIN customers c USING (customer_id)
    CROSS JOIN LATERAL (SELECT demo_build.rnd('pay:method:' || o.order_id) AS r) r
    CROSS JOIN LATERAL (SELECT CASE
        WHEN c.segment = 'Enterprise' THEN CASE WHEN r.r < 0.7 THEN 'bank_transfer' ELSE 'card' END
        WHEN r.r < 0.55 THEN 'card' WHEN r.r < 0.75 THEN 'paypal' WHEN r.r < 0.87 THEN 'apple_pay'
        WHEN r.r < 0.92 THEN 'gift_card' ELSE 'bank_transfer' END AS method) m
    WHERE o.status NOT IN ('cancelled', 'pending')
    UNION ALL
    SELECT o.order_id, 3,
           least(o.delivered_at + interval '2 days'
                     + floor(demo_build.rnd('pay:refund:' || o.order_id) * 1555200) * interval '1 second',
                 timestamp '2024-12-31 23:59:59'),
           o.total_amount, 'card', 'refunded'
    FROM orders o
    WHERE o.status = 'returned'
) p;
-- A refund goes back the way the money came.
UPDATE payments r SET method = c.method
FROM payments c
WHERE r.status = 'refunded' AND c.status = 'captured' AND c.order_id = r.order_id;

-- Events: browsing sessions of 1-6 events (anonymous or logged in), plus one signup event per customer
-- who signed up in 2023-2024.
CREATE TABLE demo_build.sessions AS
SELECT s.*,
       CASE WHEN c.signup_date <= s.started_at::date THEN c.customer_id END AS customer_id,
       jsonb_build_object(
           'type', s.device_type,
           'os', demo_build.pick(CASE s.device_type WHEN 'desktop' THEN ARRAY['Windows', 'Windows', 'macOS', 'Linux']
                                                    WHEN 'mobile' THEN ARRAY['iOS', 'Android']
                                                    ELSE ARRAY['iPadOS', 'Android'] END, 'sess:os:' || s.s),
           'browser', demo_build.pick(CASE s.device_type WHEN 'desktop' THEN ARRAY['Chrome', 'Chrome', 'Safari', 'Firefox', 'Edge']
                                                         ELSE ARRAY['Chrome', 'Safari', 'App'] END, 'sess:browser:' || s.s)
       ) AS device
FROM (
    SELECT s,
           md5('sess:id:' || s)::uuid AS session_id,
           -- Traffic doubles over the 731 days from 2023-01-01 to 2024-12-31, as orders do.
           timestamp '2023-01-01'
               + floor((sqrt(1 + 3 * demo_build.rnd('sess:when:' || s)) - 1) * 63158000) * interval '1 second'
               AS started_at,
           CASE WHEN demo_build.rnd('sess:anon:' || s) >= 0.45
                THEN 1 + floor(demo_build.rnd('sess:cust:' || s) * 2000)::int END AS customer_pick,
           1 + floor(demo_build.rnd('sess:len:' || s) * 6)::int AS n_events,
           CASE WHEN demo_build.rnd('sess:dev:' || s) < 0.5 THEN 'desktop'
                WHEN demo_build.rnd('sess:dev:' || s) < 0.9 THEN 'mobile' ELSE 'tablet' END AS device_type
    FROM generate_series(1, 8000) AS s
) s
LEFT JOIN customers c ON c.customer_id = s.customer_pick;

CREATE TABLE demo_build.events AS
SELECT s.session_id, e.k, s.started_at + ((e.k - 1) * 45 + floor(e.r_gap * 40)) * interval '1 second' AS occurred_at,
       s.customer_id, e.event_type,
       CASE e.event_type
       WHEN 'page_view' THEN jsonb_strip_nulls(jsonb_build_object(
           'page', pg.page, 'device', s.device, 'duration_ms', 800 + floor(e.r_gap * 90000)::int,
           'referrer', CASE WHEN e.k = 1 THEN demo_build.pick(ARRAY['google.com', 'google.com', 'bing.com',
               'facebook.com', 'instagram.com', 'newsletter', 'direct', 'direct'], 'ev:ref:' || s.s) END)
           || CASE WHEN e.k = 1 AND demo_build.rnd('ev:utm:' || s.s) < 0.3 THEN jsonb_build_object('utm',
               jsonb_build_object(
                   'source', demo_build.pick(ARRAY['google', 'facebook', 'newsletter', 'instagram'], 'ev:src:' || s.s),
                   'medium', demo_build.pick(ARRAY['cpc', 'social', 'email'], 'ev:med:' || s.s),
                   'campaign', CASE WHEN s.started_at < timestamp '2024-01-01'
                       THEN demo_build.pick(ARRAY['spring_sale_2023', 'summer_2023', 'black_friday_2023'], 'ev:cmp:' || s.s)
                       ELSE demo_build.pick(ARRAY['spring_sale_2024', 'summer_2024', 'black_friday_2024',
                                                  'brand_awareness'], 'ev:cmp:' || s.s) END))
              ELSE '{}'::jsonb END)
       WHEN 'click' THEN jsonb_build_object(
           'page', pg.page, 'device', s.device,
           'element', (ARRAY[jsonb_build_object('id', 'add-to-cart', 'text', 'Add to cart'),
                             jsonb_build_object('id', 'buy-now', 'text', 'Buy now'),
                             jsonb_build_object('id', 'nav-deals', 'text', 'Deals'),
                             jsonb_build_object('id', 'newsletter-signup', 'text', 'Subscribe'),
                             jsonb_build_object('id', 'filter-price', 'text', 'Filter by price')])
                      [1 + floor(e.r_what * 5)::int])
       WHEN 'search' THEN jsonb_build_object(
           'device', s.device,
           'query', (ARRAY['wireless headphones', 'standing desk', 'espresso machine', 'running shoes', 'laptop',
                           'board game', 'yoga mat', 'office chair', 'gift ideas', 'cookbook', 'phone case',
                           'bluetooth speaker', 'tent', 'desk lamp', 'perfume'])[1 + floor(e.r_what * 15)::int],
           'results', floor(e.r_gap * e.r_gap * 48)::int)
       ELSE jsonb_build_object(
           'device', s.device, 'product_id', pr.product_id, 'price', pr.list_price,
           'quantity', 1 + floor(e.r_what * e.r_what * 3)::int)
       END AS payload
FROM demo_build.sessions s
CROSS JOIN LATERAL (
    SELECT k,
           CASE WHEN k = 1 OR demo_build.rnd('ev:type:' || s.s || ':' || k) < 0.45 THEN 'page_view'
                WHEN demo_build.rnd('ev:type:' || s.s || ':' || k) < 0.70 THEN 'click'
                WHEN demo_build.rnd('ev:type:' || s.s || ':' || k) < 0.85 THEN 'search'
                ELSE 'add_to_cart' END AS event_type,
           demo_build.rnd('ev:gap:' || s.s || ':' || k) AS r_gap,
           demo_build.rnd('ev:what:' || s.s || ':' || k) AS r_what,
           demo_build.rnd('ev:page:' || s.s || ':' || k) AS r_page,
           1 + (floor(demo_build.skew(demo_build.rnd('ev:prod:' || s.s || ':' || k)) * 200)::int * 73 + 11) % 200
               AS product_id
    FROM generate_series(1, s.n_events) AS k
) e
JOIN products pr ON pr.product_id = e.product_id
JOIN categories cat ON cat.category_id = pr.category_id
CROSS JOIN LATERAL (SELECT CASE
    WHEN e.r_page < 0.5 THEN jsonb_build_object('path', '/products/' || pr.product_id, 'title', pr.name)
    WHEN e.r_page < 0.7 THEN jsonb_build_object('path', '/category/' || cat.category_id, 'title', cat.name)
    WHEN e.r_page < 0.8 THEN jsonb_build_object('path', '/', 'title', 'Home')
    WHEN e.r_page < 0.9 THEN jsonb_build_object('path', '/cart', 'title', 'Your cart')
    ELSE jsonb_build_object('path', '/checkout', 'title', 'Checkout') END AS page) pg
UNION ALL
SELECT md5('signup:' || c.customer_id)::uuid, 1,
       c.signup_date + floor(demo_build.rnd('ev:signup:' || c.customer_id) * 86400) * interval '1 second',
       c.customer_id, 'signup',
       jsonb_build_object(
           'method', demo_build.pick(ARRAY['email', 'email', 'google', 'apple'], 'ev:method:' || c.customer_id),
           'plan', CASE WHEN c.segment = 'Consumer' THEN 'free' ELSE 'business' END,
           'referral_code', CASE WHEN demo_build.rnd('ev:referral:' || c.customer_id) < 0.15
                                 THEN 'REF-' || upper(substr(md5('ref:' || c.customer_id), 1, 6)) END,
           'device', (ARRAY[jsonb_build_object('type', 'desktop', 'os', 'Windows', 'browser', 'Chrome'),
                            jsonb_build_object('type', 'desktop', 'os', 'macOS', 'browser', 'Safari'),
                            jsonb_build_object('type', 'mobile', 'os', 'iOS', 'browser', 'App'),
                            jsonb_build_object('type', 'mobile', 'os', 'Android', 'browser', 'App')])
                     [1 + floor(demo_build.rnd('ev:device:' || c.customer_id) * 4)::int])
FROM customers c
WHERE c.signup_date >= date '2023-01-01';

INSERT INTO events
SELECT row_number() OVER (ORDER BY occurred_at, session_id, k), occurred_at, customer_id, session_id, event_type,
       payload
FROM demo_build.events;
