"""The LexicalAnalysis task: CRF loss and Viterbi prediction, a few training steps, raw-text batching,
chunking of long texts, bad input, metrics and building from a config."""
import numpy
import pytest

import framework
from framework import optimizer
from framework.engine import Task
from framework.engine.batching import length_batches
from framework.engine.task import to_tensors
from framework.errors import InputError
from framework.nn import functional as F
from framework.registry import TASKS
from nlp.data.vocab import TagSet, Vocab
from nlp.lac.model import BiGRUCRF
from nlp.lac.preprocess import CharPreprocessor
from nlp.lac.task import LexicalAnalysis, group_words

CHARS = "今天是个好日子我爱北京。"
TAGS = TagSet.from_pos(["n", "v", "w"])
TRAIN = [("今天是个好日子。", ["n-B", "n-I", "v-B", "n-B", "n-I", "n-I", "n-I", "w-B"]),
         ("我爱北京。", ["n-B", "v-B", "n-B", "n-I", "w-B"]),
         ("北京是个好日子", ["n-B", "n-I", "v-B", "n-B", "n-I", "n-I", "n-I"])]


def make_task(**options):
    vocab = Vocab(list(CHARS))
    model = BiGRUCRF(len(vocab), len(TAGS), emb_dim=8, hidden=8)
    return LexicalAnalysis(model, preprocessor=CharPreprocessor(vocab), tag_names=TAGS.names, **options)


def training_batch(task):
    samples = [{"tokens": task.preprocessor.vocab.encode(text), "labels": TAGS.encode(labels)}
               for text, labels in TRAIN]
    return to_tensors(task.collate_fn(samples))


def _char_tags(task, outputs):
    """The per-character tag names of a predict_batch output's texts, end to end."""
    names = task._raw_tools()[1].names
    return [names[i] for i in task._char_tag_ids(outputs).tolist()]


def test_expand_and_group_follow_lac_rules():
    # an id of tag t covering k characters tags them t, then k - 1 times t[:-2] + "-I" (a tag name or not)
    task = LexicalAnalysis(None, preprocessor=CharPreprocessor(Vocab(list(CHARS))), tag_names=["n-B", "v-B", "O"])
    outputs = {"tags": numpy.array([[0, 1, 2], [1, 0, 0]]), "lengths": numpy.array([3, 1]),
               "word_lengths": numpy.array([2, 1, 3, 2])}
    assert _char_tags(task, outputs) == ["n-B", "n-I", "v-B", "O", "-I", "-I", "v-B", "v-I"]
    assert group_words("甲乙丙丁戊", ["n-B", "n-I", "v-I", "O", "a-B"]) == (["甲乙丙丁", "戊"], ["", "a"])
    assert group_words("甲乙", ["O", "n-I"]) == (["甲乙"], ["n"])
    assert group_words("甲乙", ["x-S", "y-S"]) == (["甲", "乙"], ["x", "y"])
    assert group_words("", []) == ([], [])


def test_whitespace_ends_words_and_is_never_one():
    # a space ends the word before it, is dropped, and the next character starts a word whatever its tag
    assert group_words("甲乙 丙丁", ["n-B", "n-I", "n-I", "n-I", "v-I"]) == (["甲乙", "丙丁"], ["n", "v"])
    assert group_words(" 甲 ", ["w-B", "n-B", "w-I"]) == (["甲"], ["n"])
    assert group_words("a \t\u3000b", ["n-B", "n-I", "O", "n-I", "v-B"]) == (["a", "b"], ["n", "v"])
    assert group_words("  ", ["w-B", "w-I"]) == ([], [])
    assert group_words("甲 乙丙", ["n-B", "w-B", "n-I", "v-B"]) == (["甲", "乙", "丙"], ["n", "n", "v"])


def _reference_grouping(text, char_tags, whitespace=True):
    """LAC's grouping rule, with the whitespace rule (``whitespace``) or without it (the official one), one
    character at a time."""
    words, labels, start = [], [], None
    for i, (char, tag) in enumerate(zip(text, char_tags)):
        space = whitespace and char.isspace()
        if space or (start is not None and tag.endswith(("B", "S"))):
            if start is not None:
                words.append(text[start:i])
                labels.append(char_tags[i - 1][:-2])
            start = None
        if start is None and not space:
            start = i
    if start is not None:
        words.append(text[start:])
        labels.append(char_tags[-1][:-2])
    return words, labels


@pytest.mark.parametrize("seed", range(3))
def test_grouping_of_many_texts_at_once_equals_the_one_character_at_a_time_rule(seed):
    rng = numpy.random.default_rng(seed)
    names = ["n-B", "n-I", "v-B", "v-I", "w-S", "O"]
    task = LexicalAnalysis(None, preprocessor=CharPreprocessor(Vocab(list(CHARS))), tag_names=names)
    texts = ["".join(rng.choice(list("甲乙丙丁 \t\u3000"), size=rng.integers(0, 12))) for _ in range(40)]
    tag_ids = [rng.integers(0, len(names), size=len(text)) for text in texts]
    expected = [_reference_grouping(text, [names[i] for i in ids]) for text, ids in zip(texts, tag_ids)]
    assert [group_words(text, [names[i] for i in ids]) for text, ids in zip(texts, tag_ids)] == expected
    results = task._results(texts, numpy.concatenate(tag_ids).astype(numpy.int64), "split")
    assert [(r["words"], r["tags"]) for r in results] == expected
    official = [_reference_grouping(text, [names[i] for i in ids], whitespace=False)
                for text, ids in zip(texts, tag_ids)]
    assert [group_words(text, [names[i] for i in ids], "official") for text, ids in zip(texts, tag_ids)] == official
    results = task._results(texts, numpy.concatenate(tag_ids).astype(numpy.int64), "official")
    assert [(r["words"], r["tags"]) for r in results] == official


def test_predictions_never_hold_whitespace_and_still_follow_the_input():
    task = make_task()
    texts = ["今天 是个 好日子", " 我爱北京。 ", "北京\t是个\u3000好日子", "   "]
    for text, result in zip(texts, task.predict_raw(texts)):
        assert all(word and not any(c.isspace() for c in word) for word in result["words"])
        assert "".join(result["words"]) == "".join(text.split())
        assert len(result["tags"]) == len(result["words"])
        line = " ".join(f"{w}/{t}" for w, t in zip(result["words"], result["tags"]))
        assert [item.rsplit("/", 1)[0] for item in line.split()] == result["words"]   # word/tag output splits
    # the model sees the spaces (as the official LAC does): grouping drops them from the same character tags
    text = texts[0]
    char_tags = _char_tags(task, task.predict_batch(to_tensors(task.preprocess([text]))))
    assert len(char_tags) == len(text)
    assert task.predict_raw([text])[0] == dict(zip(("words", "tags"), group_words(text, char_tags)))


def test_loss_is_mean_crf_nll_and_predict_is_viterbi():
    task = make_task()
    batch = training_batch(task)
    assert batch["tokens"].shape == (3, 8) and batch["labels"].shape == (3, 8)
    assert batch["tokens_lengths"].numpy().tolist() == [8, 5, 7]
    loss = task.loss(batch)
    emissions = task.model(batch["tokens"], batch["tokens_lengths"])
    nll = F.linear_chain_crf(emissions, batch["labels"], batch["tokens_lengths"], task.model.crf.transition)
    assert loss.shape == () and loss.item() == pytest.approx(nll.numpy().mean(), rel=1e-6)
    outputs = task.predict_batch(batch)
    _, paths = F.viterbi_decode(emissions, task.model.crf.transition, batch["tokens_lengths"])
    assert outputs["tags"].dtype == numpy.int64
    numpy.testing.assert_array_equal(outputs["tags"].numpy(), paths.numpy())
    assert not outputs["tags"].numpy()[1, 5:].any()
    numpy.testing.assert_array_equal(outputs["lengths"].numpy(), [8, 5, 7])


def test_constrained_decoding_uses_the_allowed_mask():
    """constrain_decoding decodes with the allowed mask: no X-I first or after another word type, the same paths
    as the -1e4 penalty form it replaced."""
    task = make_task(constrain_decoding=True)
    with framework.no_grad():
        task.model.crf.transition.data[2:, :] = 0.0
        for name in TAGS.names:                                # make every X-I attractive everywhere
            if name.endswith("-I"):
                task.model.crf.transition.data[:, TAGS.names.index(name)] = 3.0
    batch = training_batch(task)
    tags = task.predict_batch(batch)["tags"].numpy()
    allowed = task.allowed_transitions()
    for row, length in zip(tags, batch["tokens_lengths"].numpy()):
        path = row[:length]
        assert allowed[0, path[0]] and all(allowed[2 + a, b] for a, b in zip(path[:-1], path[1:]))
    emissions = task.model(batch["tokens"], batch["tokens_lengths"])
    penalised = task.model.crf.transition.numpy() + numpy.where(allowed, 0.0, -1e4).astype(numpy.float32)
    _, paths = F.viterbi_decode(emissions, framework.to_tensor(penalised), batch["tokens_lengths"])
    numpy.testing.assert_array_equal(tags, paths.numpy())


def test_a_few_training_steps_fit_a_tiny_corpus():
    task = make_task()
    batch = training_batch(task)
    adam = optimizer.Adam(learning_rate=0.05, parameters=task.model.parameters())
    first = None
    for _ in range(60):
        loss = task.loss(batch)
        first = first if first is not None else loss.item()
        loss.backward()
        adam.step()
        adam.clear_grad()
    assert loss.item() < 0.1 * first
    task.model.eval()
    results = task.predict_raw([text for text, _ in TRAIN])
    assert results[1] == {"words": ["我", "爱", "北京", "。"], "tags": ["n", "v", "n", "w"]}
    assert results[0]["words"] == ["今天", "是", "个好日子", "。"]
    metrics = task.metrics()
    metrics[0].update(task.predict_batch(batch), batch)
    scores = metrics[0].compute()
    assert scores["seg_f1"] == 1.0 and scores["pos_f1"] == 1.0


def test_predict_raw_keeps_input_order_across_length_batches():
    task = make_task(batch_size=2)
    texts = ["今天是个好日子我爱北京", "", "我", "好日子。", "北京北京北京", "是"]
    together = task.predict_raw(texts)
    alone = [task.predict_raw([text])[0] for text in texts]
    assert together == alone
    assert together[1] == {"words": [], "tags": []}
    for text, result in zip(texts, together):
        assert "".join(result["words"]) == text and len(result["words"]) == len(result["tags"])
    assert task.predict(texts) == together                 # the zoo's entry point
    # the base Task path (preprocess -> predict_batch -> postprocess) gives the same for non-empty texts
    assert Task.predict_raw(task, texts[2:]) == together[2:]


def test_long_texts_are_cut_into_chunks_and_joined():
    task = make_task(max_chunk_len=5, max_batch_tokens=6)
    text = "今天是个好日子。我爱北京。北京是个好日子"
    chunks = ["今天是个好", "日子。", "我爱北京。", "北京是个好", "日子"]
    chunk_tags = []
    for chunk in chunks:
        outputs = task.predict_batch(to_tensors(task.preprocess([chunk])))
        chunk_tags.extend(_char_tags(task, outputs))
    words, tags = group_words(text, chunk_tags)
    assert task.predict_raw([text]) == [{"words": words, "tags": tags}]
    assert length_batches([5, 3, 5, 1], task.predict_batch_size, task.max_batch_tokens) == [[3, 1], [0], [2]]


def test_bad_input_is_named():
    task = make_task()
    with pytest.raises(InputError, match="^input 2: a text to analyse must be a str, got int$"):
        task.predict_raw(["今天", "好", 3])
    with pytest.raises(InputError, match="expected a list of str, got str"):
        task.predict_raw("今天")
    with pytest.raises(InputError, match="input 0: .* got bytes"):
        task.predict_raw([b"\xe4\xbb\x8a"])
    with pytest.raises(ValueError, match="input 1 is empty"):
        task.preprocess(["今天", ""])
    with pytest.raises(ValueError, match="needs a preprocessor"):
        LexicalAnalysis(task.model).predict_raw(["今天"])
    with pytest.raises(ValueError, match="batch_size"):
        LexicalAnalysis(task.model, batch_size=0)


def test_built_from_a_config_with_saved_vocab_and_tags(tmp_path):
    vocab, model = Vocab(list(CHARS)), BiGRUCRF(len(CHARS) + 2, len(TAGS), emb_dim=4, hidden=4)
    vocab.save(str(tmp_path / "vocab.txt"))
    TAGS.save(str(tmp_path / "tags.txt"))
    task = TASKS.build({"type": "LexicalAnalysis", "vocab_file": str(tmp_path / "vocab.txt"),
                        "tag_file": str(tmp_path / "tags.txt"), "batch_size": 8}, model=model)
    assert task.tag_names == TAGS.names and task.preprocessor.vocab == vocab and task.predict_batch_size == 8
    result = task.predict_raw(["今天是个好日子"])[0]
    assert "".join(result["words"]) == "今天是个好日子"
    assert set(result["tags"]) <= {"n", "v", "w", ""}
    # without a tag set the People's Daily one is used (as by the metrics)
    from nlp.data.peoples_daily import TAGSET
    assert LexicalAnalysis(model).metrics()[0].tagset == TAGSET


@pytest.mark.gpu
def test_official_model_on_gpu_matches_cpu():
    from nlp.lac.task import load_official_task
    task = load_official_task()
    texts = ["百度是一家高科技公司", "LAC是个优秀的分词工具", "今天是个好日子"]
    on_cpu = task.predict_raw(texts)
    task.model.to("gpu")
    try:
        assert task.predict_raw(texts, device="gpu") == on_cpu
    finally:
        task.model.to("cpu")
        framework.set_device("cpu")
