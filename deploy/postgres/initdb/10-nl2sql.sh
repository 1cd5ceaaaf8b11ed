#!/bin/sh
# First start of the compose Postgres only (the official image runs /docker-entrypoint-initdb.d/* on an
# empty data directory): the read-only role the gateway queries as, the demo database built from the
# repository's gateway/demo/*.sql (mounted at /opt/nl2sql-demo), and the gateway's store database.
# The same grants as gateway/demo/generator.py, which docs/hidden-data.md recommends for production targets.
set -eu

: "${NL2SQL_READER_PASSWORD:?set NL2SQL_READER_PASSWORD}"
: "${NL2SQL_STORE_PASSWORD:?set NL2SQL_STORE_PASSWORD}"

psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
     -v reader_password="$NL2SQL_READER_PASSWORD" -v store_password="$NL2SQL_STORE_PASSWORD" <<'SQL'
CREATE ROLE nl2sql_reader LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
    PASSWORD :'reader_password';
ALTER ROLE nl2sql_reader SET default_transaction_read_only = on;
CREATE ROLE nl2sql_store LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
    PASSWORD :'store_password';
CREATE DATABASE demo;
CREATE DATABASE nl2sql_store OWNER nl2sql_store;

\connect demo
\i /opt/nl2sql-demo/schema.sql
\i /opt/nl2sql-demo/data.sql
\i /opt/nl2sql-demo/finish.sql
GRANT CONNECT ON DATABASE demo TO nl2sql_reader;
REVOKE CREATE, TEMPORARY ON DATABASE demo FROM PUBLIC;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO nl2sql_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO nl2sql_reader;
ANALYZE;
SQL
