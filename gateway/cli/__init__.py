"""The ``nl2sql-gateway`` command line: the main app (``gateway.cli.main``) and one module per sub-command."""
