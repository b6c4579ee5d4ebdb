"""What an instructor reads about a class rather than about one student: the code its submissions
share (``similarity``) and what the class got wrong in a lab (``class_report``).

These only show: nothing here grades, changes a grade or runs student code.  Only the command line
imports them.
"""
