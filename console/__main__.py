"""``python -m console``: the same as the ``triage`` command."""

from .cli import main

main()
