"""Sentiment data for the course's classifier: a shipped data set, tokens, ids, minibatches.

The pipeline from text to what ``mini.nn`` eats::

    data = load_sentiment()                          # or load_sst2("path/to/SST-2")
    vocab = Vocabulary.build(data.train.sentences)
    ids, mask = encode_batch(data.train.sentences, vocab)      # (batch, max_len) each
    for ids_b, mask_b, labels_b in batches(ids, mask, data.train.labels, 32, rng):
        ...

``ids`` are padded with ``<pad>`` (id 0) and ``mask`` is 1.0 on real tokens and 0.0 on padding, so
mean pooling over tokens is ``sum(h * mask) / sum(mask)``: padding never counts.

The shipped set (``sentiment.tsv``, 6,000 sentences about films, written by ``mini.data.generate``,
whose docstring gives the labelling rules) is small enough to train on in seconds and is built so
that negation and contrast ("... but ...") matter.  ``load_sst2`` reads the real Stanford Sentiment
Treebank in GLUE's format for those who have downloaded it.
"""
import re
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = ["Split", "Splits", "Vocabulary", "load_sentiment", "load_sst2", "tokenize",
           "encode_batch", "batches", "PAD", "UNK"]

PAD, UNK = "<pad>", "<unk>"


@dataclass(frozen=True)
class Split:
    """One split: ``sentences`` (list of str), ``labels`` (int64 array; 1 positive, 0 negative)."""
    sentences: list
    labels: np.ndarray

    def __len__(self):
        return len(self.sentences)


@dataclass(frozen=True)
class Splits:
    """A data set's splits: ``train`` to fit, ``validation`` to choose, ``test`` to report."""
    train: Split
    validation: Split
    test: Split


def _split(pairs):
    return Split([s for s, _ in pairs], np.array([y for _, y in pairs], dtype=np.int64))


def load_sentiment():
    """The shipped film-review set: 4,800 train, 600 validation, 600 test sentences, each 50/50."""
    text = resources.files(__name__).joinpath("sentiment.tsv").read_text(encoding="utf-8")
    by_split = {"train": [], "validation": [], "test": []}
    for line in text.splitlines()[1:]:
        sentence, label, split = line.split("\t")
        by_split[split].append((sentence, int(label)))
    return Splits(**{name: _split(pairs) for name, pairs in by_split.items()})


# Words are runs of letters/digits, keeping inner apostrophes ("don't", "director's", SST-2's "n't")
# and a leading one (SST-2's split-off "'s"); any other non-space character is a token of its own.
_TOKEN = re.compile(r"\w+(?:'\w+)*|'\w+|[^\w\s]")


def tokenize(sentence):
    """Lowercase word tokens with punctuation split off: ``"Not bad, really!"`` ->
    ``["not", "bad", ",", "really", "!"]``."""
    return _TOKEN.findall(sentence.lower())


class Vocabulary:
    """A two-way map between tokens and integer ids; ``<pad>`` is 0 and ``<unk>`` is 1.

    Ids are what an ``Embedding`` indexes: row ``i`` of the embedding matrix belongs to token ``i``.
    """

    def __init__(self, tokens):
        """``tokens``: the id-ordered token list, starting with ``<pad>``, ``<unk>``."""
        if list(tokens[:2]) != [PAD, UNK]:
            raise ValueError(f"a vocabulary must start with {PAD!r}, {UNK!r}; "
                             f"got {list(tokens[:2])}")
        self.tokens = list(tokens)
        self.index = {token: i for i, token in enumerate(self.tokens)}

    @classmethod
    def build(cls, sentences, min_count=1):
        """The vocabulary of ``sentences`` (strings): every token seen at least ``min_count`` times,
        most frequent first (ties alphabetical, so the ids are reproducible).  Build it from the
        training split only: words first met at test time must become ``<unk>``, as they would for
        a deployed model."""
        counts = Counter(token for s in sentences for token in tokenize(s))
        kept = sorted((t for t, c in counts.items() if c >= min_count),
                      key=lambda t: (-counts[t], t))
        return cls([PAD, UNK] + [t for t in kept if t not in (PAD, UNK)])

    def __len__(self):
        return len(self.tokens)

    def encode(self, tokens):
        """Token list -> id list; tokens not in the vocabulary become ``<unk>`` (1)."""
        return [self.index.get(token, 1) for token in tokens]

    def decode(self, ids):
        """Id list -> token list, leaving out ``<pad>``: a padded row reads as its sentence."""
        return [self.tokens[i] for i in ids if i != 0]


def encode_batch(sentences, vocab, max_len=None):
    """Tokenize, encode and pad a list of sentences.

    Returns ``(ids, mask)``, both of shape ``(len(sentences), max_len)``: ``ids`` int64, padded with
    0 (``<pad>``); ``mask`` float64, 1.0 on real tokens and 0.0 on padding.  ``max_len`` defaults to
    the longest sentence; longer sentences are cut to their first ``max_len`` tokens.
    """
    encoded = [vocab.encode(tokenize(s)) for s in sentences]
    for i, row in enumerate(encoded):
        if not row:
            raise ValueError(f"sentence {i} ({sentences[i]!r}) has no tokens; mean pooling over "
                             "zero tokens is undefined")
    if max_len is None:
        max_len = max((len(row) for row in encoded), default=0)
    elif max_len < 1:
        raise ValueError(f"max_len must be at least 1, got {max_len}")
    lengths = np.array([min(len(row), max_len) for row in encoded], dtype=np.int64)
    ids = np.zeros((len(encoded), max_len), dtype=np.int64)
    for i, row in enumerate(encoded):
        ids[i, :lengths[i]] = row[:max_len]
    mask = (np.arange(max_len) < lengths[:, None]).astype(np.float64)
    return ids, mask


def batches(ids, mask, labels, batch_size, rng=None):
    """Yield ``(ids, mask, labels)`` minibatches of ``batch_size`` rows (the last may be smaller).

    With a ``numpy.random.Generator`` the rows are shuffled by a fresh permutation on every call, so
    each epoch of SGD sees a new order and a seeded generator repeats the whole run; with
    ``rng=None`` they come in order (for evaluation).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if not len(ids) == len(mask) == len(labels):
        raise ValueError(f"ids, mask and labels must have the same number of rows; got "
                         f"{len(ids)}, {len(mask)}, {len(labels)}")
    order = np.arange(len(ids)) if rng is None else rng.permutation(len(ids))
    for start in range(0, len(ids), batch_size):
        rows = order[start:start + batch_size]
        yield ids[rows], mask[rows], labels[rows]


def _read_glue_tsv(path):
    """Read one labelled GLUE SST-2 file (header ``sentence<TAB>label``) into a :class:`Split`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"SST-2 file not found: {path}")
    with path.open(encoding="utf-8") as lines:
        header = next(lines, "").rstrip("\r\n").split("\t")
        if header == ["index", "sentence"]:
            raise ValueError(f"{path}: this is GLUE's unlabelled test split (header 'index<TAB>"
                             "sentence'); use dev.tsv as the test set")
        if header != ["sentence", "label"]:
            raise ValueError(f"{path}, line 1: expected the header 'sentence<TAB>label', got "
                             f"{'<TAB>'.join(header)!r}")
        pairs = []
        for number, line in enumerate(lines, start=2):
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != 2:
                raise ValueError(f"{path}, line {number}: expected 2 tab-separated fields "
                                 f"(sentence, label), got {len(fields)}")
            sentence, label = fields
            if label not in ("0", "1"):
                raise ValueError(f"{path}, line {number}: label must be 0 or 1, got {label!r}")
            if not tokenize(sentence):
                raise ValueError(f"{path}, line {number}: the sentence is empty")
            pairs.append((sentence.strip(), int(label)))
    return _split(pairs)


def load_sst2(path, validation_fraction=0.05, seed=0):
    """Read GLUE's SST-2 folder (``train.tsv``, ``dev.tsv``) into the same :class:`Splits`.

    GLUE keeps the test labels private (its ``test.tsv`` has ``index<TAB>sentence`` and no labels),
    so, as in most papers, ``dev.tsv`` (872 sentences) is the test split here, and a seeded
    ``validation_fraction`` of ``train.tsv`` is held out as the validation split.  Malformed lines
    raise ``ValueError`` naming the file and line.
    """
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"SST-2 folder not found: {path} "
                                "(expected a folder holding train.tsv and dev.tsv)")
    train = _read_glue_tsv(path / "train.tsv")
    test = _read_glue_tsv(path / "dev.tsv")
    order = np.random.default_rng(seed).permutation(len(train))
    held_out = round(validation_fraction * len(train))
    return Splits(train=_subset(train, order[held_out:]),
                  validation=_subset(train, order[:held_out]), test=test)


def _subset(split, rows):
    rows = np.sort(rows)                                # keep the file's order
    return Split([split.sentences[i] for i in rows], split.labels[rows])
