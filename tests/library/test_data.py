"""mini.data: the shipped sentiment set, tokenizer, vocabulary, batching and the SST-2 loader."""
from importlib import resources

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini.data import (Vocabulary, batches, encode_batch, load_sentiment, load_sst2, tokenize)
from mini.data import generate as gen


@pytest.fixture(scope="module")
def data():
    return load_sentiment()


# ---- the shipped data set ------------------------------------------------------------------------

def test_shipped_file_equals_a_fresh_generation():
    shipped = resources.files("mini.data").joinpath("sentiment.tsv").read_bytes()
    fresh = gen.render(gen.generate()).encode("utf-8")
    assert shipped == fresh, "sentiment.tsv is stale: run `python -m mini.data.generate`"


def test_sizes_balance_and_types(data):
    for name, size in [("train", 4800), ("validation", 600), ("test", 600)]:
        split = getattr(data, name)
        assert len(split) == len(split.labels) == size, name
        assert split.labels.dtype == np.int64 and set(split.labels) == {0, 1}, name
        share = split.labels.mean()
        assert abs(share - 0.5) < 0.02, f"{name} is not balanced: {share:.3f} positive"
        assert all(isinstance(s, str) and s for s in split.sentences), name


def test_no_sentence_appears_twice(data):
    seen = {}
    for name in ("train", "validation", "test"):
        for sentence in getattr(data, name).sentences:
            key = tuple(tokenize(sentence))
            assert key not in seen, f"{sentence!r} is in {seen[key]} and again in {name}"
            seen[key] = name


def _content_word(phrase):
    """The word that carries a phrase's polarity: "worth it" -> "worth", "a mess" -> "mess"."""
    words = phrase.split()
    return words[-1] if words[0] == "a" else words[0]


POLARITY = {**{_content_word(p): 1 for p in gen.POSITIVE},
            **{_content_word(p): 0 for p in gen.NEGATIVE},
            **{w: 1 for pair in gen.LIKE for w in pair},
            **{w: 0 for pair in gen.DISLIKE for w in pair}}


def _clause_polarity(tokens):
    """Rules 1 and 2: the one polarity word, flipped by any negator."""
    found = [POLARITY[t] for t in tokens if t in POLARITY]
    assert len(found) == 1, f"expected one polarity word in {tokens}"
    negated = any(t in ("not", "never", "hardly", "far") or t.endswith("n't") for t in tokens)
    return 1 - found[0] if negated else found[0]


def _label_by_the_rules(sentence):
    """An independent reading of generate.py's docstring; rule 3 picks the deciding clause."""
    tokens = tokenize(sentence)
    for i, token in enumerate(tokens):
        if token in ("but", "yet"):
            return _clause_polarity(tokens[i + 1:])
        if token in ("although", "though"):
            if i == 0:                                  # "although A, B": B decides
                return _clause_polarity(tokens[tokens.index(","):])
            return _clause_polarity(tokens[:i])         # "B (even) though A": B decides
        if token == "and":
            first, second = _clause_polarity(tokens[:i]), _clause_polarity(tokens[i + 1:])
            assert first == second, f"'and' joins disagreeing clauses: {sentence!r}"
            return first
    return _clause_polarity(tokens)


def test_every_label_follows_the_documented_rules(data):
    for split in (data.train, data.validation, data.test):
        for sentence, label in zip(split.sentences, split.labels):
            assert _label_by_the_rules(sentence) == label, sentence


def _count(sentences, test):
    return sum(bool(test(tokenize(s))) for s in sentences)


def _words(phrases):
    return {w for phrase in phrases for w in phrase.split() if w != "a"}


def test_the_hard_cases_are_there(data):
    """Counts over all 6,000 sentences; the shipped file has about 1,030 negated, 625 contrasted,
    1,940 intensified and 970 hedged sentences, 600 "not good" and 130 "not bad" ones."""
    sentences = data.train.sentences + data.validation.sentences + data.test.sentences
    labels = np.concatenate([data.train.labels, data.validation.labels, data.test.labels])
    negated = lambda tokens: any(t in gen.NEGATORS or t.endswith("n't") for t in tokens)
    two_clauses = lambda tokens: any(t in ("and", *gen.CONTRASTS) for t in tokens)
    single = [(s, y) for s, y in zip(sentences, labels) if not two_clauses(tokenize(s))]
    intensifiers = _words(gen.INTENSIFIERS + gen.VERB_INTENSIFIERS)
    hedges = _words(gen.HEDGES + gen.VERB_HEDGES)
    found = {
        "negated": _count(sentences, negated),
        "contrast": _count(sentences, lambda ts: set(gen.CONTRASTS) & set(ts)),
        "intensifier": _count(sentences, lambda ts: intensifiers & set(ts)),
        "hedge": _count(sentences, lambda ts: hedges & set(ts)),
        # one negated clause: "not good" (a bag of words learns it), "not bad" (it cannot)
        "not good": _count([s for s, y in single if y == 0], negated),
        "not bad": _count([s for s, y in single if y == 1], negated),
    }
    needed = {"negated": 800, "contrast": 450, "intensifier": 1200, "hedge": 600, "not good": 400,
              "not bad": 80}
    short = {kind: (found[kind], needed[kind]) for kind in needed if found[kind] < needed[kind]}
    assert not short, f"too few hard cases, (found, needed): {short}"


def _bag_of_words(sentences, vocab, mean):
    """Token counts per sentence (or their mean over tokens, as mean pooling sees them), plus a
    bias column in place of <pad>."""
    ids, mask = encode_batch(sentences, vocab)
    X = np.zeros((len(ids), len(vocab)))
    np.add.at(X, (np.repeat(np.arange(len(ids)), ids.shape[1]), ids.ravel()), mask.ravel())
    if mean:
        X /= mask.sum(axis=1, keepdims=True)
    X[:, 0] = 1.0
    return X


def _logistic_regression(X, y, l2=1e-2, steps=25):
    """Newton's method on the L2-regularized logistic loss: few steps, no learning rate to tune."""
    w = np.zeros(X.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-X @ w))
        hessian = (X * (p * (1 - p))[:, None]).T @ X + l2 * np.eye(len(w))
        w -= np.linalg.solve(hessian, X.T @ (p - y) + l2 * w)
    return w


@pytest.mark.parametrize("mean", [False, True], ids=["counts", "mean-pooled"])
def test_bag_of_words_is_good_but_not_perfect(data, mean):
    """A linear model on word counts cannot read order or "not bad"; one on mean-pooled tokens is
    exactly what the course's classifier can express, so >= 85% here means the classifier can."""
    vocab = Vocabulary.build(data.train.sentences)
    w = _logistic_regression(_bag_of_words(data.train.sentences, vocab, mean), data.train.labels)
    predicted = _bag_of_words(data.test.sentences, vocab, mean) @ w > 0
    accuracy = np.mean(predicted == data.test.labels)
    assert 0.85 <= accuracy <= 0.95, f"bag-of-words test accuracy {accuracy:.3f}"


# ---- tokenizer, vocabulary, batches --------------------------------------------------------------

@pytest.mark.parametrize("sentence, tokens", [
    ("Not bad, really!", ["not", "bad", ",", "really", "!"]),
    ("The director's cut isn't  great.", ["the", "director's", "cut", "isn't", "great", "."]),
    ("it 's a film that does n't work", ["it", "'s", "a", "film", "that", "does", "n't", "work"]),
    ("  ", []),
])
def test_tokenize(sentence, tokens):
    assert tokenize(sentence) == tokens


def test_vocabulary():
    vocab = Vocabulary.build(["the plot was dull", "The plot!", "the end"], min_count=2)
    assert vocab.tokens == ["<pad>", "<unk>", "the", "plot"]
    assert len(vocab) == 4
    assert vocab.encode(["the", "dull", "plot"]) == [2, 1, 3]
    assert vocab.decode([2, 3, 0, 0]) == ["the", "plot"]
    assert Vocabulary.build(["b a", "a"]).tokens == ["<pad>", "<unk>", "a", "b"]
    with pytest.raises(ValueError, match="must start with"):
        Vocabulary(["a", "<pad>", "<unk>"])


def test_encode_batch_pads_masks_and_truncates():
    vocab = Vocabulary.build(["a b c d"])
    ids, mask = encode_batch(["a b c", "d zzz", "a b c d"], vocab)
    a, b, c, d = vocab.encode(["a", "b", "c", "d"])
    assert ids.dtype == np.int64 and mask.dtype == np.float64
    np.testing.assert_array_equal(ids, [[a, b, c, 0], [d, 1, 0, 0], [a, b, c, d]])
    np.testing.assert_array_equal(mask, [[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]])
    ids, mask = encode_batch(["a b c", "d"], vocab, max_len=2)
    np.testing.assert_array_equal(ids, [[a, b], [d, 0]])
    np.testing.assert_array_equal(mask, [[1, 1], [1, 0]])
    with pytest.raises(ValueError, match="sentence 1 .* no tokens"):
        encode_batch(["a", " "], vocab)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcxy"), min_size=1, max_size=8).map(" ".join),
                min_size=1, max_size=6),
       st.one_of(st.none(), st.integers(1, 10)))
def test_encode_batch_shapes(sentences, max_len):
    vocab = Vocabulary.build(["a b c"])
    ids, mask = encode_batch(sentences, vocab, max_len)
    lengths = [len(tokenize(s)) for s in sentences]
    assert ids.shape == mask.shape == (len(sentences), max_len or max(lengths))
    np.testing.assert_array_equal(mask.sum(axis=1), np.minimum(lengths, ids.shape[1]))
    assert np.all(ids[mask == 0] == 0) and np.all(ids[mask == 1] != 0)


def test_batches_shuffle_deterministically_and_cover_every_row():
    ids, mask, labels = np.arange(20).reshape(10, 2), np.ones((10, 2)), np.arange(10)
    first = list(batches(ids, mask, labels, 4, np.random.default_rng(7)))
    again = list(batches(ids, mask, labels, 4, np.random.default_rng(7)))
    assert [len(b[2]) for b in first] == [4, 4, 2]
    assert all(np.array_equal(x, y) for b1, b2 in zip(first, again) for x, y in zip(b1, b2))
    seen = np.concatenate([b[2] for b in first])
    assert sorted(seen) == list(range(10)) and list(seen) != list(range(10))
    for b_ids, _, b_labels in first:                    # rows stay together
        np.testing.assert_array_equal(b_ids[:, 0], 2 * b_labels)
    in_order = np.concatenate([b[2] for b in batches(ids, mask, labels, 3)])
    np.testing.assert_array_equal(in_order, labels)
    with pytest.raises(ValueError, match="same number of rows"):
        next(batches(ids, mask, labels[:5], 4))


# ---- SST-2 ---------------------------------------------------------------------------------------

def _sst2(folder, train="sentence\tlabel\n", dev="sentence\tlabel\nit 's a charming film \t1\n"):
    folder.mkdir(exist_ok=True)
    (folder / "train.tsv").write_text(train, encoding="utf-8")
    (folder / "dev.tsv").write_text(dev, encoding="utf-8")
    return folder


def test_load_sst2_reads_glue_files(tmp_path):
    train = "sentence\tlabel\n" + "".join(f"sentence number {i} \t{i % 2}\n" for i in range(40))
    data = load_sst2(_sst2(tmp_path, train=train), validation_fraction=0.25)
    assert len(data.train) == 30 and len(data.validation) == 10
    assert sorted(data.train.sentences + data.validation.sentences) == sorted(
        f"sentence number {i}" for i in range(40))
    for split in (data.train, data.validation):
        assert all(int(s.split()[-1]) % 2 == y for s, y in zip(split.sentences, split.labels))
    assert data.test.sentences == ["it 's a charming film"]
    assert data.test.labels.tolist() == [1] and data.test.labels.dtype == np.int64


@pytest.mark.parametrize("train, message", [
    ("sentence\tlabel\ngood film\t1\na\tb\tc\n", r"train\.tsv, line 3: expected 2 tab-separated"),
    ("sentence\tlabel\ngood film\t1\nbad film\t2\n", r"train\.tsv, line 3: label must be 0 or 1"),
    ("sentence\tlabel\ngood film\n", r"train\.tsv, line 2: expected 2 .* got 1"),
    ("good film\t1\n", r"train\.tsv, line 1: expected the header 'sentence<TAB>label'"),
    ("", r"train\.tsv, line 1: expected the header"),
    ("index\tsentence\n0\tgood film\n", r"train\.tsv: this is GLUE's unlabelled test split"),
    ("sentence\tlabel\n \t1\n", r"train\.tsv, line 2: the sentence is empty"),
])
def test_load_sst2_names_the_file_and_line_of_a_bad_row(tmp_path, train, message):
    with pytest.raises(ValueError, match=message):
        load_sst2(_sst2(tmp_path, train=train))


def test_load_sst2_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="SST-2 folder not found: .*nowhere"):
        load_sst2(tmp_path / "nowhere")
    folder = _sst2(tmp_path)
    (folder / "dev.tsv").unlink()
    with pytest.raises(FileNotFoundError, match=r"SST-2 file not found: .*dev\.tsv"):
        load_sst2(folder)
