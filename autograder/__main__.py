"""``python -m autograder``: see autograder/cli.py."""
import sys

from autograder.cli import main

sys.exit(main())
