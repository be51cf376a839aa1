"""Toy review files for the sentiment tests: filler characters plus one sentiment word, so a model can learn them."""


def write_toy_reviews(path, size, rng, header=False):
    """Write ``size`` ``label<TAB>text`` lines to ``path``: 好 in a positive text, 差 in a negative one, among
    2-8 random filler characters (``rng``: a NumPy Generator); ``header`` adds a ``label<TAB>text`` first line.
    Returns ``str(path)``."""
    lines = ["label\ttext"] if header else []
    for _ in range(size):
        label = int(rng.integers(0, 2))
        filler = "".join(rng.choice(list("书手机质量快慢"), size=int(rng.integers(2, 9))))
        cut = int(rng.integers(0, len(filler) + 1))
        lines.append(f"{label}\t{filler[:cut]}{'好' if label else '差'}{filler[cut:]}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)
