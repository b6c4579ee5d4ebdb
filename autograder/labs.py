"""The labs of the course: their names, and which earlier labs each one builds on.

The one place these facts live: the command line, the checks, the student editions of mini and
the kit read them here.  Nothing here imports mini or the checks, so every process may.
"""
LABS = ("lab1_learning", "lab2_graphs", "lab3_autodiff", "lab4_framework", "lab5_kernels")

NEEDS = {
    "lab1_learning": (),
    "lab2_graphs": (),
    "lab3_autodiff": ("lab1_learning", "lab2_graphs"),
    "lab4_framework": ("lab1_learning", "lab2_graphs", "lab3_autodiff"),
    "lab5_kernels": ("lab1_learning", "lab2_graphs", "lab3_autodiff", "lab4_framework"),
}
"""The earlier labs whose answers a lab runs on: lab 3's backward pass walks lab 2's topological
order and lab 1's log-softmax, lab 4's framework differentiates with lab 3's table, lab 5 trains
lab 4's classifier on its kernels.  A student edition of mini for a lab reveals these (they are
revealed to its students when it is released, and in every process that grades it); a lab
withheld is one whose deadline has not passed."""


ALSO_WITHHOLDS = {
    "lab4_framework": {("lab1", "softmax_loss"): "classifier",
                       ("lab2", "evaluate"): "session_run",
                       ("lab3", "backward_pass"): "gradients"},
}
"""Answers of earlier labs that a lab asks for again, in a new setting, and so are withheld with
it while it is not revealed: ``{lab: {(earlier lab, its fill-in): the fill-in that asks again}}``.
Lab 4's ``gradients`` is lab 3's reverse pass run on graph nodes, its ``session_run`` lab 2's
evaluation with feeds, its classifier's loss lab 1's cross-entropy."""


def withheld_marks(withheld_labs):
    """What an edition that withholds ``withheld_labs`` (full or short names) leaves out:
    ``(labs, {(lab, fill-in): (asking lab, asking fill-in)})``, short names, for
    ``autograder.edition.write``."""
    labs = {short_name(lab_name(lab)) for lab in withheld_labs}
    also = {mark: (short_name(lab), fill_in) for lab in LABS if short_name(lab) in labs
            for mark, fill_in in ALSO_WITHHOLDS.get(lab, {}).items()}
    return labs, also


def lab_name(lab):
    """A lab's full name from its full or short name (``"lab3"`` is ``"lab3_autodiff"``)."""
    for name in LABS:
        if lab in (name, short_name(name)):
            return name
    raise ValueError(f"unknown lab {lab!r}; the labs are {', '.join(LABS)}")


def short_name(lab):
    """``"lab3_autodiff"`` -> ``"lab3"``: what mini's marks (``mini.answers``) and the checks'
    modules call a lab."""
    return lab.split("_")[0]


def needs(lab):
    """The labs ``lab`` runs on, as full names (``NEEDS`` lists every one, not only the last)."""
    return NEEDS[lab_name(lab)]


def missing_needs(lab, revealed):
    """The labs ``lab`` needs that are not among ``revealed`` (full or short names)."""
    shown = {lab_name(name) for name in revealed}
    return [need for need in needs(lab) if need not in shown]


TEST_PREFIX = "test_"
"""A test cell's id is its fill-in's id after this prefix: ``test_toposort`` checks ``toposort``."""


def fill_in_tested_by(grade_id):
    """The fill-in a test cell checks: ``test_toposort`` checks the cell ``toposort``."""
    return grade_id[len(TEST_PREFIX):]


def test_cell_of(fill_in):
    """The id of the test cell that checks ``fill_in`` (:func:`fill_in_tested_by`'s inverse)."""
    return TEST_PREFIX + fill_in
