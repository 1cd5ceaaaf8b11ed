"""The demo: an embedded PostgreSQL server and a deterministic BI database to try the gateway on."""
