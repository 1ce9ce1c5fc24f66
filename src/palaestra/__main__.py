"""``python -m palaestra``: the same as the ``palaestra`` command."""

from palaestra.cli import main

main()
