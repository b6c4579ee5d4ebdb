"""The labs' notebooks in this checkout, and their cells by grade id."""
from support import ROOT


def notebook(folder, lab):
    """The notebook of ``lab`` in ``folder`` of the checkout (``labs``, ``solutions``...)."""
    return ROOT / folder / lab / f"{lab}.ipynb"


def cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
