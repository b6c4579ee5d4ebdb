"""Grading for the mini labs: the nbgrader course, the hidden checks and the pytest grading path."""
