"""``python -m schedlab`` is the same as the ``schedlab`` command."""

from schedlab.cli import main

raise SystemExit(main())
