"""What a class got wrong in one lab, for the instructor before the next lecture.

``python -m autograder report LAB`` reads the graded submissions of either grading path and
writes one HTML page (with the grade histogram as a PNG beside it), and prints a short summary:

* the histogram of the autograded scores (the test cells' points; written answers graded by hand
  are not in it);
* each test cell's pass rate (full marks) and mean score, and each behaviour's pass rate (the
  behaviours of each fill-in, ``CHECKS`` in ``autograder/checks/``: a behaviour passes for a
  student whose test cell did not lose its share);
* per fill-in, the commonest failure messages and how many students got each.  Messages are
  grouped with their numbers taken out (seeds, sizes, node numbers, which cell and line), so the
  same mistake made on different random inputs counts once per student;  a fill-in left as the
  released stub (``NotImplementedError``) is counted as not attempted, apart from the mistakes;
* the median grading time per submission where the results record it (the nbgrader path: the
  kernel's timing of the autograded notebook's cells; the pytest path: Gradescope's
  ``execution_time``, when a results.json holds one).

Everything read from a submission (messages, student ids) is escaped in the page, and stripped of
control characters in the terminal: student output is hostile.
"""
import dataclasses
import html
import json
import re
import statistics
from pathlib import Path


from autograder.checks import behaviours_of
from autograder.labs import fill_in_tested_by, lab_name
from autograder.nbgrader_path import course
from autograder.notebooks import test_cells

from autograder.reports.class_results import HIDDEN, VISIBLE, ClassResults, collect

MESSAGE_CHARS = 1500                 # of one failure message shown in the page
LISTED_STUDENTS = 12                 # student ids named under a failure message


@dataclasses.dataclass
class Failure:
    """One failure message of a fill-in (grouped by :func:`message_key`), and who got it."""

    example: str                     # the message as the first of its students got it
    students: list = dataclasses.field(default_factory=list)
    behaviours: list = dataclasses.field(default_factory=list)
    messages: set = dataclasses.field(default_factory=set)     # the distinct messages grouped

    @property
    def variants(self):
        return len(self.messages)


@dataclasses.dataclass
class FillIn:
    name: str
    grade_id: str
    points: float
    behaviours: list                 # [(behaviour, share of points, students who passed it)]
    visible_passed: int
    failures: list                   # [Failure], the commonest first
    not_attempted: list              # students who left the released stub


@dataclasses.dataclass
class Report:
    results: ClassResults
    points: float                    # the autograded points of the lab
    scores: list                     # [(student, score)]
    cells: list                      # [(grade id, points, students with full marks, mean score)]
    fill_ins: list                   # [FillIn]
    median_seconds: float | None
    timed: int                       # submissions whose grading time is known

    @property
    def count(self):
        return len(self.scores)


# --- reading the results ------------------------------------------------------------------------

def message_key(message):
    """What two failure messages share when they are the same mistake on different inputs: the
    message with every number (seeds, sizes, indices, values, node numbers) and address taken
    out, its spaces collapsed."""
    text = re.sub(r"0x[0-9a-fA-F]+", "0x#", message)
    text = re.sub(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", "#", text)
    return re.sub(r"\s+", " ", text).strip()


def not_attempted(message):
    """Whether a failure is the released stub's ``raise NotImplementedError()``."""
    return bool(re.match(r"(NotImplementedError\b|.*\braised NotImplementedError\b)", message))


def analyse(results):
    """The :class:`Report` of a class's results."""
    lab, subs = results.lab, results.submissions
    tests = test_cells(lab)
    n = len(subs)
    cells = []
    for grade_id, points in tests:
        full = sum(1 for s in subs if s.cells[grade_id].score >= s.cells[grade_id].max_score)
        mean = statistics.fmean(s.cells[grade_id].score for s in subs) if n else 0.0
        cells.append((grade_id, points, full, mean))
    fill_ins = []
    for grade_id, points in tests:
        fill_in = fill_in_tested_by(grade_id)
        behaviours = behaviours_of(lab).get(fill_in, {})
        total = sum(parts for parts, _ in behaviours.values()) or 1
        whole = (VISIBLE, HIDDEN)
        rows = [(behaviour, round(points * parts / total, 2),
                 sum(1 for s in subs if not (s.cells[grade_id].lost.keys()
                                             & {behaviour, *whole})))
                for behaviour, (parts, _) in behaviours.items()]
        visible = sum(1 for s in subs if VISIBLE not in s.cells[grade_id].lost)
        groups, stubs = {}, []
        for s in subs:
            for behaviour, message in s.cells[grade_id].lost.items():
                if not_attempted(message):
                    if s.student not in stubs:
                        stubs.append(s.student)
                    continue
                group = groups.setdefault(message_key(message), Failure(message))
                if s.student not in group.students:
                    group.students.append(s.student)
                if behaviour not in group.behaviours:
                    group.behaviours.append(behaviour)
                group.messages.add(message)
        failures = sorted(groups.values(), key=lambda f: (-len(f.students), f.example))
        fill_ins.append(FillIn(fill_in, grade_id, points, rows, visible, failures, stubs))
    timed = [s.seconds for s in subs if s.seconds is not None]
    return Report(results, sum(points for _, points in tests),
                  [(s.student, s.score) for s in subs], cells, fill_ins,
                  statistics.median(timed) if timed else None, len(timed))


# --- the page -----------------------------------------------------------------------------------

def histogram_counts(report, bins=10):
    """``(edges, counts)`` of the scores: ``bins`` equal bins from 0 to the lab's points, the
    last one closed (full marks fall in it)."""
    import numpy as np
    edges = np.linspace(0.0, report.points or 1.0, bins + 1)
    counts, _ = np.histogram([score for _, score in report.scores], bins=edges)
    return [float(edge) for edge in edges], [int(count) for count in counts]


def draw_histogram(report, path):
    """The grade histogram as a PNG (matplotlib's Agg backend), its counts in the file's text
    chunks too ("Counts": JSON ``{"edges": [...], "counts": [...]}``)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    edges, counts = histogram_counts(report)
    figure = Figure(figsize=(7, 3.6), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    width = edges[1] - edges[0]
    bars = axes.bar(edges[:-1], counts, width=width * 0.92, align="edge", color="#4c72b0")
    axes.bar_label(bars, labels=[str(count) if count else "" for count in counts], padding=2)
    if report.scores:
        median = statistics.median(score for _, score in report.scores)
        axes.axvline(median, color="#c44e52", linestyle="--", linewidth=1.5,
                     label=f"median {median:g}")
        axes.legend(loc="upper left", frameon=False)
    axes.set_xlim(0, edges[-1])
    axes.set_xticks(edges)
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_ylim(0, max(counts + [1]) * 1.15)
    axes.set_xlabel(f"autograded score (out of {report.points:g})")
    axes.set_ylabel("students")
    axes.set_title(f"{report.results.lab}: {report.count} submission"
                   f"{'s' if report.count != 1 else ''} ({report.results.path} path)")
    axes.spines[["top", "right"]].set_visible(False)
    figure.tight_layout()
    figure.savefig(path, format="png", metadata={
        "Title": f"grade histogram of {report.results.lab}",
        "Description": f"{report.count} submissions graded on the {report.results.path} path",
        "Counts": json.dumps({"edges": edges, "counts": counts})})
    return path


STYLE = """
body { font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem;
       color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
th, td { text-align: left; padding: 0.2rem 0.7rem; border-bottom: 1px solid #ddd;
         vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.bar { display: inline-block; height: 0.8rem; background: #4c72b0; vertical-align: middle; }
.barbg { display: inline-block; width: 8rem; background: #eee; }
pre { white-space: pre-wrap; word-break: break-word; background: #f6f6f6; padding: 0.4rem;
      margin: 0.2rem 0; max-height: 14rem; overflow: auto; }
.muted { color: #666; font-size: 0.9em; }
tr.visible td { font-style: italic; }
"""

# no script may run, and nothing may be fetched, whatever a message slipped past the escaping
POLICY = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'"


def _e(text):
    return html.escape(str(text), quote=True)


def _rate(passed, n):
    share = passed / n if n else 0.0
    return (f'<td class="num">{passed} / {n}</td><td class="num">{share:.0%}</td>'
            f'<td><span class="barbg"><span class="bar" style="width:{share * 100:.0f}%">'
            "</span></span></td>")


def _students(names):
    shown = ", ".join(_e(name) for name in names[:LISTED_STUDENTS])
    more = len(names) - LISTED_STUDENTS
    return shown + (f" and {more} more" if more > 0 else "")


def render(report, picture):
    """The page, ``picture`` being the histogram's file name beside it."""
    results, n = report.results, report.count
    scores = [score for _, score in report.scores]
    full = sum(1 for score in scores if score >= report.points)
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">',
        f"<title>{_e(results.lab)}: what the class got wrong</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{_e(results.lab)}: what the class got wrong</h1>",
        f"<p>{n} submission{'s' if n != 1 else ''}, graded on the {_e(results.path)} path "
        f'<span class="muted">({_e(results.source)})</span>.']
    if scores:
        parts.append(f" Mean score {statistics.fmean(scores):.1f}, median "
                     f"{statistics.median(scores):g} of {report.points:g}; {full} with full "
                     "marks.")
    parts.append(f" {_e(_time_sentence(report))}</p>")
    if results.problems:
        parts.append("<p>Not read: " + "; ".join(_e(p) for p in results.problems) + "</p>")

    parts.append('<h2 id="grades">Grades</h2>')
    parts.append(f'<img src="{_e(picture)}" alt="histogram of the autograded scores of {n} '
                 f'submissions" width="700">')
    edges, counts = histogram_counts(report)
    parts.append('<p class="muted">Autograded points only (written answers graded by hand are '
                 "not in them). " + "; ".join(
                     f"{edges[i]:g}&ndash;{edges[i + 1]:g}: {count}"
                     for i, count in enumerate(counts) if count) + "</p>")

    parts.append('<h2 id="test-cells">Test cells</h2>')
    parts.append("<table><tr><th>test cell</th><th>points</th><th colspan=3>full marks</th>"
                 "<th>mean score</th></tr>")
    for grade_id, points, passed, mean in report.cells:
        parts.append(f'<tr><td><a href="#{_e(grade_id)}">{_e(grade_id)}</a></td>'
                     f'<td class="num">{points:g}</td>{_rate(passed, n)}'
                     f'<td class="num">{mean:.1f}</td></tr>')
    parts.append("</table>")

    parts.append('<h2 id="fill-ins">Behaviours and failures, per fill-in</h2>')
    parts.append('<p class="muted">A test cell earns the share of each behaviour of its fill-in '
                 "whose hidden checks all pass; a visible test that fails costs the whole cell. "
                 "Failure messages are grouped with their numbers taken out; each shows one "
                 "student's message.</p>")
    for fill_in in report.fill_ins:
        parts.append(f'<h3 id="{_e(fill_in.grade_id)}">{_e(fill_in.name)} '
                     f'<span class="muted">({_e(fill_in.grade_id)}, {fill_in.points:g} '
                     "points)</span></h3>")
        parts.append("<table><tr><th>behaviour</th><th>points</th><th colspan=3>passed</th>"
                     "</tr>")
        parts.append(f'<tr class="visible"><td>{VISIBLE} run without an error</td><td></td>'
                     f"{_rate(fill_in.visible_passed, n)}</tr>")
        for behaviour, share, passed in fill_in.behaviours:
            parts.append(f'<tr><td>{_e(behaviour)}</td><td class="num">{share:g}</td>'
                         f"{_rate(passed, n)}</tr>")
        parts.append("</table>")
        if fill_in.not_attempted:
            parts.append(f"<p>Not attempted (the released stub) by {len(fill_in.not_attempted)} "
                         f"student{'s' if len(fill_in.not_attempted) != 1 else ''}: "
                         f"{_students(fill_in.not_attempted)}</p>")
        if not fill_in.failures:
            parts.append("<p>No failure messages.</p>" if not fill_in.not_attempted else "")
            continue
        parts.append("<table><tr><th>students</th><th>message</th></tr>")
        for failure in fill_in.failures:
            variants = (f", {failure.variants} variants" if failure.variants > 1 else "")
            message = failure.example
            if len(message) > MESSAGE_CHARS:
                message = message[:MESSAGE_CHARS] + " [...]"
            parts.append(
                f'<tr><td class="num">{len(failure.students)}</td><td>'
                f"<pre>{_e(message)}</pre>"
                f'<span class="muted">lost: {", ".join(_e(b) for b in failure.behaviours)}'
                f"{variants}; {_students(failure.students)}</span></td></tr>")
        parts.append("</table>")

    parts.append('<h2 id="time">Grading time</h2>')
    parts.append(f"<p>{_e(_time_sentence(report))}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _time_sentence(report):
    if report.median_seconds is None:
        return ("Median grading time per submission: not recorded by the "
                f"{report.results.path} path's results.")
    how = ("the kernel's timing of the autograded notebook's cells, first to last: the "
           "notebook's run, without the kernel's start" if report.results.path == "nbgrader"
           else "execution_time in results.json")
    return (f"Median grading time per submission: {report.median_seconds:.1f} s "
            f"({report.timed} of {report.count} submissions timed, by {how}).")


def default_out(lab):
    return course.place("report", lab_name(lab), "index.html")


def picture_name(out):
    out = Path(out)
    return "histogram.png" if out.stem == "index" else f"{out.stem}-histogram.png"


def write(report, out):
    """Write the page to ``out`` and its histogram beside it; returns ``out``."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    picture = picture_name(out)
    draw_histogram(report, out.parent / picture)
    partial = out.with_name(out.name + ".partial")
    partial.write_text(render(report, picture), encoding="utf-8")
    partial.replace(out)
    return out


# --- the terminal -------------------------------------------------------------------------------

def _plain(text, chars=110):
    """One line of ``text`` safe for a terminal: no control characters, cut to ``chars``."""
    line = re.sub(r"[\x00-\x1f\x7f-\x9f]+", " ", str(text)).strip()
    return line if len(line) <= chars else line[:chars - 3] + "..."


def summary(report, out=None):
    """The short text the command prints."""
    results, n = report.results, report.count
    scores = [score for _, score in report.scores]
    lines = [f"{results.lab}: {n} submission{'s' if n != 1 else ''}, graded on the "
             f"{results.path} path ({results.source})"]
    if scores:
        full = sum(1 for score in scores if score >= report.points)
        lines.append(f"  scores: mean {statistics.fmean(scores):.1f}, median "
                     f"{statistics.median(scores):g} of {report.points:g}; {full} with full marks")
        hardest = sorted(report.cells, key=lambda cell: (cell[2], cell[3] / (cell[1] or 1)))[:3]
        lines.append("  fewest full marks: " + ", ".join(
            f"{grade_id} {passed}/{n}" for grade_id, _, passed, _ in hardest))
    commonest = [(fill_in.name, failure) for fill_in in report.fill_ins
                 for failure in fill_in.failures[:1]]
    commonest.sort(key=lambda item: -len(item[1].students))
    if commonest:
        lines.append("  commonest failure per fill-in:")
        for name, failure in commonest[:8]:
            count = len(failure.students)
            lines.append("    " + _plain(f"{name} ({count} student{'s' if count != 1 else ''}): "
                                       f"{failure.example}"))
    stubs = [f"{fill_in.name} {len(fill_in.not_attempted)}" for fill_in in report.fill_ins
             if fill_in.not_attempted]
    if stubs:
        lines.append("  not attempted: " + ", ".join(stubs))
    lines.append("  " + _time_sentence(report))
    for problem in results.problems:
        lines.append("  not read: " + _plain(problem))
    if out is not None:
        lines.append(f"report in {out}")
    return "\n".join(lines)


def build(lab, out=None, path=None, results=None):
    """Read, analyse and write the report of ``lab``; returns ``(page, report, summary text)``."""
    report = analyse(collect(lab, path, results))
    page = write(report, Path(out).resolve() if out else default_out(lab))
    return page, report, summary(report, page)
