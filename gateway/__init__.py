"""nl2sql-gateway: a read-only SQL gateway between natural-language clients and PostgreSQL."""

__version__ = "0.1.0"
