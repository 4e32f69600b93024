"""``python -m memlab ...``: the ``memlab`` command (e.g. from a checkout without the console script)."""

from memlab.cli.main import main

raise SystemExit(main())
