"""Grading for the mini labs: the nbgrader course, the hidden checks and the pytest grading path."""
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent     # the checkout: solutions/, labs/, mini/
