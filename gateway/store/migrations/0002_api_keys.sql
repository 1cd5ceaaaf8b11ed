-- API keys for access control (gateway/auth). Only the SHA-256 of each key's secret is kept: the token is
-- shown once by `nl2sql-gateway keys create` and cannot be recovered from the store.
CREATE TABLE api_keys (
    id            text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{12}$'),  -- the token's public part, for lookup
    name          text NOT NULL CHECK (name <> ''),
    role          text NOT NULL CHECK (role IN ('client', 'dba', 'admin')),
    databases     text[] NOT NULL CHECK (cardinality(databases) > 0),  -- '{*}' means every database
    pg_role       text,                                                 -- assumed with SET LOCAL ROLE
    secret_sha256 bytea NOT NULL CHECK (length(secret_sha256) = 32),
    created_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at    timestamptz
);

-- One active key per name, so `keys list` and the logs name keys unambiguously; revoked names can return.
CREATE UNIQUE INDEX api_keys_active_name ON api_keys (name) WHERE revoked_at IS NULL;
