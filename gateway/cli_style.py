"""How every command's help reads: plain text that uses the terminal's whole width (rich's boxed panels left
an option's help a third of 80 columns), and ``-h`` beside ``--help``."""

from __future__ import annotations

from typing import Any

CLI_STYLE: dict[str, Any] = {
    "rich_markup_mode": None,
    "context_settings": {"help_option_names": ["-h", "--help"]},
}
