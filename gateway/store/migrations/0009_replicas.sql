-- Rate limits shared by every worker and replica (issue "Many replicas"): one token bucket per API key or
-- end user ('key:<id>', 'user:<id>'), refilled at the caller's configured rate. Replicas take a few tokens at
-- a time (a lease) with take_tokens(), one statement, so the hot path rarely waits on the store.
CREATE TABLE rate_buckets (
    key    text PRIMARY KEY,
    tokens double precision NOT NULL,
    at     timestamptz NOT NULL
);

-- Up to p_want tokens from p_key's bucket (p_rate per second, at most p_burst held): granted, and when none
-- could be, how long until one can (wait_s). The row lock serialises takers; the time is read after it.
CREATE FUNCTION take_tokens(p_key text, p_rate double precision, p_burst double precision, p_want integer,
                            OUT granted integer, OUT wait_s double precision)
LANGUAGE plpgsql AS $$
DECLARE
    held  double precision;
    last  timestamptz;
    now_  timestamptz;
    avail double precision;
BEGIN
    INSERT INTO rate_buckets (key, tokens, at) VALUES (p_key, p_burst, clock_timestamp())
        ON CONFLICT (key) DO NOTHING;
    SELECT tokens, at INTO held, last FROM rate_buckets WHERE key = p_key FOR UPDATE;
    now_ := clock_timestamp();
    avail := least(p_burst, held + greatest(0, extract(epoch FROM now_ - last)) * p_rate);
    granted := greatest(0, least(p_want, floor(avail)))::integer;
    wait_s := CASE WHEN granted > 0 THEN 0 ELSE (1 - avail) / p_rate END;
    UPDATE rate_buckets SET tokens = avail - granted, at = greatest(now_, last) WHERE key = p_key;
END
$$;

-- Changes every replica must see within a second: a version per kind, bumped by triggers on the tables
-- whatever writes them (a replica, the CLI, a DBA's psql), and announced on the channel nl2sql_changes as
-- '<kind>:<version>:<detail>' (detail: the API key's id; the database of a guideline, '' for the global
-- one). Replicas LISTEN on a direct connection and re-read this table periodically, in case a notification
-- was lost.
CREATE TABLE store_changes (
    kind    text PRIMARY KEY,
    version bigint NOT NULL DEFAULT 0
);
INSERT INTO store_changes (kind) VALUES ('keys'), ('guidelines'), ('examples');

CREATE FUNCTION note_change() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v      bigint;
    detail text;
BEGIN
    UPDATE store_changes SET version = version + 1 WHERE kind = TG_ARGV[0] RETURNING version INTO v;
    IF TG_NARGS > 1 THEN
        detail := to_jsonb(coalesce(NEW, OLD)) ->> TG_ARGV[1];
    END IF;
    PERFORM pg_notify('nl2sql_changes', TG_ARGV[0] || ':' || v || ':' || coalesce(detail, ''));
    RETURN NULL;
END
$$;

CREATE TRIGGER api_keys_changed AFTER INSERT OR UPDATE OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION note_change('keys', 'id');
CREATE TRIGGER guideline_versions_changed AFTER INSERT OR UPDATE OF status OR DELETE ON guideline_versions
    FOR EACH ROW EXECUTE FUNCTION note_change('guidelines', 'database');
CREATE TRIGGER verified_examples_changed AFTER INSERT OR UPDATE OR DELETE ON verified_examples
    FOR EACH ROW EXECUTE FUNCTION note_change('examples', 'database');
