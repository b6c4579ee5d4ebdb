"""Generate ``sentiment.tsv``, the film-review data set that ships with mini.

Run ``python -m mini.data.generate`` to rewrite the file; the output is byte-identical on every run
(one fixed seed, Python's ``random.Random``, no dependence on set order), and a test checks
that the shipped file equals a fresh generation.

Every sentence is made of one or two *clauses*, and a clause says one thing about one part of a film
("the plot was really dull", "I loved the soundtrack", "what a charming film").  The label follows
three rules, applied in this order:

1. A clause's polarity is the polarity of its adjective or verb (``POSITIVE``/``NEGATIVE``,
   ``LIKE``/``DISLIKE``).  Intensifiers ("really", "incredibly") and hedges ("somewhat", "a bit")
   never change it.
2. A negator ("not", "n't", "never", "hardly", "far from") flips the clause: "not bad at all" and
   "never boring" are positive, "hardly original" and "I did not enjoy the plot" are negative.
3. Two clauses joined by "and" agree.  Two joined by a contrast disagree, and the clause that wins
   is the one the contrast word points to: the clause *after* "but" or "yet" decides ("the acting
   was great but the plot was dull" is negative), and the clause *introduced by* "although",
   "though" or "even though" is overruled, wherever it stands ("although the acting was great,
   the plot was dull" and "the plot was dull even though the acting was great" are negative).

The mix is chosen so that word order and negation matter: a bag-of-words model cannot tell
"the plot was dull but the acting was great" from its mirror image, nor "not bad" from "not good".
It can learn that "not" leans negative (negated praise is commoner than negated criticism here, as
in real reviews), which with the easy sentences puts it at about 90% on the test split; the course's
classifier (per-token features, mean-pooled) is such a model, so this is also roughly its ceiling.
Sentences are unique after tokenization; the split (80/10/10 train/validation/test) is stratified
by label, so every split is balanced.
"""
import random
from pathlib import Path

from mini.data import tokenize

SEED = 20240611
SIZE = 6000
SPLIT_FRACTIONS = (("train", 0.8), ("validation", 0.1), ("test", 0.1))
OUTPUT = Path(__file__).with_name("sentiment.tsv")

# (noun phrase, is plural)
SUBJECTS = [
    ("the film", False), ("the movie", False), ("the plot", False), ("the story", False),
    ("the acting", False), ("the script", False), ("the dialogue", False),
    ("the soundtrack", False), ("the score", False), ("the ending", False),
    ("the opening", False), ("the final act", False), ("the cast", False),
    ("the lead actor", False), ("the pacing", False), ("the cinematography", False),
    ("the humour", False), ("the villain", False), ("the editing", False), ("the premise", False),
    ("the characters", True), ("the performances", True), ("the special effects", True),
    ("the jokes", True), ("the visuals", True), ("the action scenes", True),
]
NOUNS = ["film", "movie", "story", "script", "ending", "cast", "sequel", "comedy", "thriller",
         "drama", "debut", "adaptation"]

POSITIVE = ["good", "great", "wonderful", "brilliant", "charming", "moving", "clever", "funny",
            "gripping", "beautiful", "delightful", "superb", "fresh", "memorable", "touching",
            "inventive", "stunning", "engaging", "witty", "enjoyable", "powerful", "original",
            "excellent", "thrilling", "elegant", "worth it"]
NEGATIVE = ["bad", "dull", "boring", "awful", "terrible", "clumsy", "predictable", "tedious",
            "forgettable", "bland", "weak", "messy", "lifeless", "silly", "pointless", "painful",
            "flat", "shallow", "stale", "annoying", "confusing", "slow", "mediocre",
            "disappointing", "cheap", "a mess"]
# (present, past): "I loved the plot", "I did not love the plot"
LIKE = [("love", "loved"), ("enjoy", "enjoyed"), ("like", "liked"), ("admire", "admired"),
        ("adore", "adored"), ("appreciate", "appreciated")]
DISLIKE = [("hate", "hated"), ("dislike", "disliked"), ("loathe", "loathed"),
           ("resent", "resented"), ("despise", "despised"), ("regret", "regretted")]

INTENSIFIERS = ["really", "incredibly", "truly", "very", "remarkably", "extremely", "utterly"]
HEDGES = ["somewhat", "a bit", "slightly", "fairly", "rather", "mostly"]
VERB_INTENSIFIERS = ["really", "truly", "thoroughly", "absolutely"]   # "I thoroughly enjoyed"
VERB_HEDGES = ["somewhat", "mostly", "rather", "kind of"]             # "I kind of liked"
NEGATORS = ["not", "n't", "never", "hardly", "far"]      # as tokens; "far" only in "far from"
CONTRASTS = ["but", "although", "though", "yet"]        # "even though" -> "even", "though"

COPULA = {False: ["was", "is", "felt", "seemed"], True: ["were", "are", "felt", "seemed"]}
NEGATED_COPULA = {
    False: ["was not", "wasn't", "was never", "is not", "isn't", "was hardly", "was far from",
            "never felt", "did not feel", "never seemed"],
    True: ["were not", "weren't", "were never", "are not", "aren't", "were hardly",
           "were far from", "never felt", "did not feel", "never seemed"],
}
NEGATED_LIKE = ["did not", "didn't", "never", "hardly"]

# Sentence shapes and how often each appears, per label.  Negation leans negative ("not good"
# outnumbers "not bad" about five to one), which is what a bag of words can pick up.
SHAPES = {
    1: [("plain", 72), ("negated", 4), ("and", 15), ("contrast", 9)],
    0: [("plain", 57), ("negated", 19), ("and", 15), ("contrast", 9)],
}
NEGATE_INSIDE = 0.1   # chance that a clause of an "and"/contrast sentence is itself negated


def _modifier(rng, intensifiers=INTENSIFIERS, hedges=HEDGES):
    """An intensifier, a hedge or nothing; none of them changes the polarity (rule 1)."""
    r = rng.random()
    if r < 0.3:
        return rng.choice(intensifiers) + " "
    if r < 0.45:
        return rng.choice(hedges) + " "
    return ""


def _adjective(rng, polarity):
    """An adjective of the given polarity, sometimes modified; multi-word ones stay bare."""
    adjective = rng.choice(POSITIVE if polarity else NEGATIVE)
    return adjective if " " in adjective else _modifier(rng) + adjective


def clause(rng, polarity, negated=False, alone=False):
    """One clause whose meaning (after rule 2) has the given polarity (1 positive, 0 negative);
    only a clause that stands ``alone`` may be an exclamation ("what a clever film!")."""
    said = 1 - polarity if negated else polarity        # what the words say before negation
    subject, plural = rng.choice(SUBJECTS)
    kind = rng.random()
    if kind < 0.25:                                     # "I (did not) enjoy(ed) the plot"
        present, past = rng.choice(LIKE if said else DISLIKE)
        if negated:
            negator = rng.choice(NEGATED_LIKE)
            return f"I {negator} {present if negator.startswith('did') else past} {subject}"
        return f"I {_modifier(rng, VERB_INTENSIFIERS, VERB_HEDGES)}{past} {subject}"
    if kind < 0.35 and alone and not negated:           # "what a really clever film"
        adjective = _adjective(rng, said)
        article = "an" if adjective[0] in "aeiou" else "a"
        return f"what {article} {adjective} {rng.choice(NOUNS)}"
    if negated:                                         # "the plot was not bad at all"
        negation = rng.choice(NEGATED_COPULA[plural])
        adjective = rng.choice(POSITIVE if said else NEGATIVE)
        at_all = negation.endswith(("not", "n't", "never")) and rng.random() < 0.3
        return f"{subject} {negation} {adjective}" + (" at all" if at_all else "")
    return f"{subject} {rng.choice(COPULA[plural])} {_adjective(rng, said)}"


def sentence(rng, label):
    """One sentence with the given label, of a shape drawn from ``SHAPES[label]``."""
    shapes, weights = zip(*SHAPES[label])
    shape = rng.choices(shapes, weights)[0]
    if shape == "plain":
        text = clause(rng, label, alone=True)
    elif shape == "negated":
        text = clause(rng, label, negated=True)
    elif shape == "and":
        first = clause(rng, label, rng.random() < NEGATE_INSIDE)
        second = clause(rng, label, rng.random() < NEGATE_INSIDE)
        text = f"{first} and {second}"
    else:                                               # rule 3: the winner has the label
        winner = clause(rng, label, rng.random() < NEGATE_INSIDE)
        loser = clause(rng, 1 - label, rng.random() < NEGATE_INSIDE)
        text = rng.choice([
            f"{loser} but {winner}", f"{loser}, but {winner}", f"{loser}, yet {winner}",
            f"although {loser}, {winner}", f"though {loser}, {winner}",
            f"{winner} although {loser}", f"{winner} even though {loser}",
        ])
    return text[0].upper() + text[1:] + ("!" if text.startswith("what") else ".")


def generate(size=SIZE, seed=SEED):
    """``size`` rows ``(sentence, label, split)``, unique after tokenization, in file order."""
    rng = random.Random(seed)
    seen, by_label = set(), {0: [], 1: []}
    while len(by_label[0]) + len(by_label[1]) < size:
        label = int(len(by_label[1]) < len(by_label[0]))    # alternate: the classes stay equal
        text = sentence(rng, label)
        key = tuple(tokenize(text))
        if key not in seen:
            seen.add(key)
            by_label[label].append(text)
    rows = []
    for label in (1, 0):                                # stratified: each split is 50/50
        start = 0
        for split, fraction in SPLIT_FRACTIONS:
            stop = start + round(fraction * len(by_label[label]))
            rows += [(text, label, split) for text in by_label[label][start:stop]]
            start = stop
    rng.shuffle(rows)                                   # mix the labels, then group by split
    order = {split: i for i, (split, _) in enumerate(SPLIT_FRACTIONS)}
    return sorted(rows, key=lambda row: order[row[2]])


def render(rows):
    """The TSV text of ``rows``, header ``sentence<TAB>label<TAB>split``, newline-terminated."""
    header = ("sentence", "label", "split")
    return "".join(f"{s}\t{y}\t{split}\n" for s, y, split in [header] + rows)


def main():
    OUTPUT.write_text(render(generate()), encoding="utf-8", newline="\n")
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()
