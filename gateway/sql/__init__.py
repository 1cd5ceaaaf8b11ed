"""The client-SQL path (``/v1/sql``, ``/v1/check``) and what statements and results pass: masking, row policies."""
