"""Inference speed of the official LAC model on oar, text in -> words and tags out.

:func:`run_all` returns a dict for ``oar bench``: sentences per second of
``LexicalAnalysis.predict_raw`` at batch 1 (one call per sentence) and at
batch 64 (one call over all sentences, batched by length), and the throughput
of the pure-Python preprocessing alone (coarse segmentation, and segmentation
plus id lookup). The sentences are the People's Daily test split (one corpus
line each, joined words). Timings are the best of ``repeat`` runs after a
warm-up. The official Paddle engine's figures on one core of a 2-core x86-64
machine were about 430 sentences/s at batch 1 and 1,470/s at batch 64.
"""
__all__ = ["bench_inference", "run_all"]


def _best(fn, repeat):
    from zoo.bench import best_time
    return best_time(fn, repeat=repeat, warmup=1)


def bench_inference(texts=None, batch_sizes=(1, 64), batch1_sentences=300, repeat=3):
    """Sentences/s of the official LAC task on ``texts`` (default: the People's Daily test split).

    Batch 1 runs over the first ``batch1_sentences`` texts, one call each;
    larger batch sizes run over all texts in one call.
    """
    from nlp.lac.official import load_official_task
    if texts is None:
        from nlp.data.peoples_daily import read_sentences
        texts = ["".join(sentence.words) for sentence in read_sentences("test")]
    task = load_official_task()
    segmenter, preprocessor = task.preprocessor.segmenter, task.preprocessor
    chars = sum(map(len, texts))
    result = {"sentences": len(texts), "mean_chars": chars / max(len(texts), 1),
              "segment_chars_per_s": chars / _best(lambda: [segmenter.cut(t) for t in texts], repeat),
              "preprocess_sentences_per_s": len(texts) / _best(lambda: [preprocessor.encode(t) for t in texts],
                                                                repeat)}
    for batch_size in batch_sizes:
        task.batch_size = batch_size
        subset = texts[:batch1_sentences] if batch_size == 1 else texts
        if batch_size == 1:
            seconds = _best(lambda: [task.predict_raw([t]) for t in subset], repeat)
        else:
            seconds = _best(lambda: task.predict_raw(subset), repeat)
        result[f"batch{batch_size}_sentences_per_s"] = len(subset) / seconds
    result["official_paddle_sentences_per_s"] = {"batch1": 430, "batch64": 1470}
    return result


def run_all(quick=False):
    """The inference benchmark (``quick``: 200 sentences, one timed run)."""
    if quick:
        from nlp.data.peoples_daily import read_sentences
        texts = ["".join(sentence.words) for sentence in read_sentences("test")[:200]]
        return {"inference": bench_inference(texts, batch1_sentences=50, repeat=1)}
    return {"inference": bench_inference()}
