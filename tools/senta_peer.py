"""Print the classic peer of the Senta models as JSON: ``python tools/senta_peer.py`` (needs scikit-learn).

TF-IDF over character 1-3-grams + logistic regression, C chosen on dev (see :mod:`zoo.reproduce.peers`).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from zoo.cli import run_tool  # noqa: E402
from zoo.reproduce.peers import sentiment_splits, sentiment_tfidf_peer  # noqa: E402


def main():
    try:
        peer = sentiment_tfidf_peer(sentiment_splits())
        print(json.dumps({key: value for key, value in peer.items() if key != "test_pred"}))
    except ImportError as err:
        raise SystemExit(f"senta_peer.py: error: {err}") from None


if __name__ == "__main__":
    sys.exit(run_tool(main))
