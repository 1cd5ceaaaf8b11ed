"""Two tenants in two databases built alike, for the row-policy modes (real Postgres, no mocks).

- ``rls``: row-level security policies on every tenant table, in the documented form
  ``tenant_id = NULLIF(current_setting('nl2sql.tenant_id', true), '')::int`` ("Postgres decides");
- ``filters``: no RLS; the rules give the same tables a ``row_filter`` ("the gateway decides").

The tables belong to a NOLOGIN owner role; the gateway connects as a plain login role (RLS does not apply to
superusers, nor to a table's owner). Tenant 2's rows are recognisable: ids from 1000 up, text containing
``TENANT2``, amounts from 9000 up. ``products`` has no tenant. Views and a mixed-case, a schema-qualified
and an inheriting table are there for the refusals and the name-resolution cases.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from gateway import Gateway
from gateway.auth.keys import Principal, Role
from gateway.demo.generator import derive_dsn
from gateway.settings import DatabaseSettings, Limits, LLMSettings, Settings
from tests.conftest import PgServer, scratch_database

TENANT_TABLES = ("customers", "orders", "order_items", '"Notes"', "sales.invoices", "events")

SCHEMA = """
CREATE SCHEMA sales AUTHORIZATION {owner};
GRANT CREATE ON SCHEMA public TO {owner};
SET ROLE {owner};
CREATE TABLE customers (customer_id int PRIMARY KEY, tenant_id int NOT NULL, name text NOT NULL,
                        region text, ssn text);
CREATE TABLE products (product_id int PRIMARY KEY, name text NOT NULL, price numeric(10, 2) NOT NULL);
CREATE TABLE orders (order_id int PRIMARY KEY, tenant_id int NOT NULL, customer_id int REFERENCES customers,
                     amount numeric(10, 2) NOT NULL, status text NOT NULL, ordered_on date NOT NULL,
                     parent_order int);
CREATE TABLE order_items (item_id int PRIMARY KEY, tenant_id int NOT NULL, order_id int REFERENCES orders,
                          product_id int REFERENCES products, qty int NOT NULL);
CREATE TABLE "Notes" (note_id int PRIMARY KEY, tenant_id int NOT NULL, "Body" text NOT NULL);
CREATE TABLE sales.invoices (invoice_id int PRIMARY KEY, tenant_id int NOT NULL, order_id int,
                             total numeric(10, 2) NOT NULL, memo text);
CREATE TABLE events (event_id int, tenant_id int NOT NULL, label text NOT NULL);
CREATE TABLE events_archive (archived boolean NOT NULL DEFAULT true) INHERITS (events);
CREATE VIEW customer_orders AS SELECT c.name, o.amount FROM customers c JOIN orders o USING (customer_id);
CREATE VIEW product_list AS SELECT product_id, name FROM products;
CREATE MATERIALIZED VIEW order_totals AS SELECT tenant_id, sum(amount) AS total FROM orders GROUP BY tenant_id;

INSERT INTO products VALUES (1, 'widget', 2.50), (2, 'gadget', 10.00), (3, 'doohickey', 99.99);
INSERT INTO customers VALUES
  (1, 1, 'alice', 'eu', '111-11-1111'), (2, 1, 'bob', 'us', '222-22-2222'), (3, 1, 'carol', NULL, NULL),
  (1001, 2, 'TENANT2 dave', 'eu', '999-99-9991'), (1002, 2, 'TENANT2 erin', 'us', '999-99-9992'),
  (1003, 2, 'TENANT2 frank', 'apac', NULL);
INSERT INTO orders VALUES
  (10, 1, 1, 100.00, 'shipped', '2024-01-05', NULL), (11, 1, 1, 250.00, 'open', '2024-02-10', 10),
  (12, 1, 2, 75.50, 'shipped', '2024-03-15', 11), (13, 1, NULL, 20.00, 'cancelled', '2024-03-20', NULL),
  (1010, 2, 1001, 9100.00, 'TENANT2 shipped', '2024-01-06', NULL),
  (1011, 2, 1002, 9200.00, 'open', '2024-02-11', 1010),
  (1012, 2, 1, 9300.00, 'shipped', '2024-03-16', NULL),
  (1013, 2, 1003, 9400.00, 'cancelled', '2024-04-01', 1012);
INSERT INTO order_items VALUES
  (100, 1, 10, 1, 2), (101, 1, 10, 2, 1), (102, 1, 11, 3, 5), (103, 1, 12, 1, 7),
  (1100, 2, 1010, 1, 9001), (1101, 2, 1011, 2, 9002), (1102, 2, 1012, 3, 9003), (1103, 2, 10, 1, 9004);
INSERT INTO "Notes" VALUES (1, 1, 'call alice'), (1001, 2, 'TENANT2 secret note');
INSERT INTO sales.invoices VALUES (1, 1, 10, 100.00, 'paid'), (2, 1, 12, 75.50, NULL),
  (1001, 2, 1010, 9100.00, 'TENANT2 invoice');
INSERT INTO events VALUES (1, 1, 'login'), (1001, 2, 'TENANT2 login');
INSERT INTO events_archive (event_id, tenant_id, label) VALUES (2, 1, 'old login'), (1002, 2, 'TENANT2 old');
REFRESH MATERIALIZED VIEW order_totals;
RESET ROLE;
GRANT USAGE ON SCHEMA public, sales TO {reader};
GRANT SELECT ON ALL TABLES IN SCHEMA public, sales TO {reader};
ANALYZE;
"""

POLICY = "tenant_id = NULLIF(current_setting('nl2sql.tenant_id', true), '')::int"

RLS = "\n".join(
    # FORCE: the views belong to the tables' owner, and RLS spares a table's owner unless forced.
    f"ALTER TABLE {t} ENABLE ROW LEVEL SECURITY; ALTER TABLE {t} FORCE ROW LEVEL SECURITY; "
    f"CREATE POLICY tenant ON {t} USING ({POLICY});"
    for t in (*TENANT_TABLES, "events_archive")
)

RULES = """
tables:
  customers:
    row_filter: "tenant_id = {claim.tenant_id}"
    columns:
      ssn: {hidden: true}
  orders: {row_filter: "tenant_id = {claim.tenant_id}"}
  order_items: {row_filter: "tenant_id = {claim.tenant_id}"}
  Notes: {row_filter: "tenant_id = {claim.tenant_id}"}
  sales.invoices: {row_filter: "tenant_id = {claim.tenant_id}"}
  events: {row_filter: "tenant_id = {claim.tenant_id}"}
  events_archive: {row_filter: "tenant_id = {claim.tenant_id}"}
"""
# The RLS database hides the same column, so that both modes answer the same statements.
RLS_RULES = "tables:\n  customers:\n    columns:\n      ssn: {hidden: true}\n"


@dataclass(frozen=True)
class Tenants:
    rls_dsn: str  # as the login role
    filters_dsn: str
    rls_admin: str  # as the superuser
    filters_admin: str
    reader: str
    owner: str


def tenant(value: str | None = "1", **more: str) -> Principal:
    """A client of both databases for end user alice, with these row-policy values."""
    claims = dict(more)
    if value is not None:
        claims["tenant_id"] = value
    return Principal(name="alice", role=Role.CLIENT, databases=frozenset({"rls", "filters"}), user="alice",
                     claims=tuple(sorted(claims.items())))


@pytest.fixture(scope="session")
async def tenants(pg: PgServer) -> AsyncIterator[Tenants]:
    suffix = uuid.uuid4().hex[:8]
    owner, reader = f"rp_owner_{suffix}", f"rp_reader_{suffix}"
    admin = await asyncpg.connect(pg.admin_dsn)
    try:
        await admin.execute(f'CREATE ROLE {owner} NOLOGIN; CREATE ROLE {reader} LOGIN NOBYPASSRLS')
    finally:
        await admin.close()
    try:
        async with scratch_database(pg, "rp_rls") as rls, scratch_database(pg, "rp_filters") as filters:
            for dsn, extra in ((rls, RLS), (filters, "")):
                conn = await asyncpg.connect(dsn)
                try:
                    await conn.execute(SCHEMA.format(owner=owner, reader=reader))
                    if extra:
                        await conn.execute(f"SET ROLE {owner};\n{extra}\nRESET ROLE;")
                finally:
                    await conn.close()
            yield Tenants(derive_dsn(rls, user=reader), derive_dsn(filters, user=reader), rls, filters,
                          reader, owner)
    finally:
        admin = await asyncpg.connect(pg.admin_dsn)
        try:
            await admin.execute(f"DROP ROLE IF EXISTS {reader}; DROP ROLE IF EXISTS {owner}")
        finally:
            await admin.close()


def settings(t: Tenants, rules_dir: Path, base_url: str | None = None, pool_max_size: int = 2) -> Settings:
    (rules_dir / "filters.yaml").write_text(RULES)
    (rules_dir / "rls.yaml").write_text(RLS_RULES)
    limits = Limits(statement_timeout_ms=5000, max_rows=500)
    return Settings(
        databases={"rls": DatabaseSettings(dsn=t.rls_dsn, limits=limits, pool_max_size=pool_max_size),
                   "filters": DatabaseSettings(dsn=t.filters_dsn, limits=limits, pool_max_size=pool_max_size)},
        llm=LLMSettings(base_url=base_url, model="scripted-model" if base_url else None, timeout_s=5.0,
                        max_retries=1),
        rules_dir=rules_dir,
    )


@pytest.fixture(scope="session")
async def gw(tenants: Tenants, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Gateway]:
    async with Gateway(settings(tenants, tmp_path_factory.mktemp("rules"))) as gateway:
        yield gateway
