"""What leaves the instructor's checkout: the students' kit, collected submissions coming in, and
the Gradescope autograder zip."""
