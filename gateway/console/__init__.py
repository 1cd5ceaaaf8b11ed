"""The web console's static assets (``static/``): plain ES modules and CSS, served at ``/console``.

No build step: the files here are what the browser runs. :mod:`gateway.api.console` serves them.
"""

from pathlib import Path

STATIC = Path(__file__).parent / "static"
