"""Time Baidu's own ``LAC.train`` (LAC 2.1.2) on PaddlePaddle 2.6, the reference for ``zoo.lac.LAC.train``.

Run by the reference environment's Python (``$PADDLE_PY``, which has ``LAC==2.1.2`` and ``paddlepaddle==2.6.2``);
it imports no oar code::

    $PADDLE_PY zoo/bench/lac_train_engine.py TRAIN.txt --iter_num 10 --thread_num 1

LAC 2.1.2's training code (``LAC/nets.py``) is written against ``paddle.fluid`` 1.x, whose layer functions
PaddlePaddle 2.6 removed while keeping the operators they appended. This script puts back the ones LAC calls,
each appending the same operator with the same attributes and parameter names (``fc``: ``mul`` +
``elementwise_add``; ``dynamic_gru``: ``gru``; ``embedding``: ``lookup_table``, sparse; ``linear_chain_crf``,
``crf_decoding``, ``chunk_eval``), so Paddle runs LAC's own network, optimiser (Adam, L2 1e-4 on the
``fc``/``gru`` weights) and data reader unchanged. ``thread_num`` above 1 needs ``with_data_parallel``, which
2.6 no longer has, so the engine trains on one thread. It times ``LAC/nets.py``'s ``do_train`` (building
the program, loading the official weights, ``iter_num`` passes over the file) and prints one JSON line; the
model is not saved (2.6 writes another inference format).
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("GLOG_minloglevel", "2")
import paddle                                        # noqa: E402
import paddle.base as base                           # noqa: E402
from paddle.base.layer_helper import LayerHelper     # noqa: E402

sys.modules.setdefault("paddle.fluid", base)
sys.modules.setdefault("paddle.fluid.core", base.core)
paddle.fluid = base
paddle.enable_static()


def _data(name, shape, dtype, lod_level=0):
    return paddle.static.data(name, shape=shape, dtype=dtype, lod_level=lod_level)


def _fc(input, size, param_attr=None):
    helper = LayerHelper("fc", param_attr=param_attr)
    weight = helper.create_parameter(attr=helper.param_attr, shape=[input.shape[-1], size], dtype=input.dtype)
    bias = helper.create_parameter(attr=base.ParamAttr(), shape=[size], dtype=input.dtype, is_bias=True)
    product = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="mul", inputs={"X": input, "Y": weight}, outputs={"Out": product},
                     attrs={"x_num_col_dims": 1, "y_num_col_dims": 1})
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(type="elementwise_add", inputs={"X": product, "Y": bias}, outputs={"Out": out},
                     attrs={"axis": 1})
    return out


def _dynamic_gru(input, size, param_attr=None, is_reverse=False):
    helper = LayerHelper("gru", param_attr=param_attr)
    dtype = input.dtype
    weight = helper.create_parameter(attr=helper.param_attr, shape=[size, 3 * size], dtype=dtype)
    bias = helper.create_parameter(attr=base.ParamAttr(), shape=[1, 3 * size], dtype=dtype, is_bias=True)
    outputs = {key: helper.create_variable_for_type_inference(dtype)
               for key in ("Hidden", "BatchGate", "BatchResetHiddenPrev", "BatchHidden")}
    helper.append_op(type="gru", inputs={"Input": input, "Weight": weight, "Bias": bias}, outputs=outputs,
                     attrs={"is_reverse": is_reverse, "gate_activation": "sigmoid", "activation": "tanh",
                            "origin_mode": False})
    return outputs["Hidden"]


def _embedding(input, size, is_sparse=False, param_attr=None, dtype="float32"):
    helper = LayerHelper("embedding", param_attr=param_attr)
    weight = helper.create_parameter(attr=helper.param_attr, shape=size, dtype=dtype)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op(type="lookup_table", inputs={"Ids": input, "W": weight}, outputs={"Out": out},
                     attrs={"is_sparse": is_sparse, "is_distributed": False, "remote_prefetch": False,
                            "padding_idx": -1})
    return out


def _linear_chain_crf(input, label, param_attr=None):
    helper = LayerHelper("linear_chain_crf", param_attr=param_attr)
    size = input.shape[-1]
    transition = helper.create_parameter(attr=helper.param_attr, shape=[size + 2, size], dtype=input.dtype)
    outputs = {key: helper.create_variable_for_type_inference(input.dtype)
               for key in ("Alpha", "EmissionExps", "TransitionExps", "LogLikelihood")}
    helper.append_op(type="linear_chain_crf", inputs={"Emission": input, "Transition": transition, "Label": label},
                     outputs=outputs)
    return outputs["LogLikelihood"]


def _crf_decoding(input, param_attr, label=None):
    helper = LayerHelper("crf_decoding")
    transition = helper.get_parameter(param_attr.name)
    path = helper.create_variable_for_type_inference("int64")
    inputs = {"Emission": [input], "Transition": transition}
    if label is not None:
        inputs["Label"] = label
    helper.append_op(type="crf_decoding", inputs=inputs, outputs={"ViterbiPath": [path]})
    return path


def _chunk_eval(input, label, chunk_scheme, num_chunk_types, excluded_chunk_types=None):
    helper = LayerHelper("chunk_eval")
    names = ("Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks", "NumCorrectChunks")
    outputs = {key: helper.create_variable_for_type_inference("float32" if i < 3 else "int64")
               for i, key in enumerate(names)}
    helper.append_op(type="chunk_eval", inputs={"Inference": [input], "Label": [label]}, outputs=outputs,
                     attrs={"num_chunk_types": num_chunk_types, "chunk_scheme": chunk_scheme,
                            "excluded_chunk_types": excluded_chunk_types or []})
    return tuple(outputs[key] for key in names)


class _ChunkEvaluator:
    """fluid.metrics.ChunkEvaluator: precision, recall and F1 from accumulated chunk counts."""

    def reset(self):
        self.counts = [0, 0, 0]

    def update(self, infer, label, correct):
        self.counts = [a + int(b.sum()) for a, b in zip(self.counts, (infer, label, correct))]

    def eval(self):
        infer, label, correct = self.counts
        precision, recall = correct / max(infer, 1), correct / max(label, 1)
        return precision, recall, 2 * precision * recall / max(precision + recall, 1e-12)


class _Namespace:
    def __init__(self, **names):
        self.__dict__.update(names)


base.layers.data, base.layers.fc, base.layers.dynamic_gru = _data, _fc, _dynamic_gru
base.layers.embedding, base.layers.linear_chain_crf, base.layers.crf_decoding = _embedding, _linear_chain_crf, \
    _crf_decoding
base.layers.chunk_eval, base.layers.concat = _chunk_eval, lambda input, axis=0: paddle.concat(input, axis=axis)
base.layers.mean = lambda x: paddle.mean(x)
base.metrics = _Namespace(ChunkEvaluator=_ChunkEvaluator)
base.optimizer = _Namespace(Adam=lambda learning_rate: paddle.optimizer.Adam(learning_rate=learning_rate))
base.initializer = _Namespace(Uniform=paddle.nn.initializer.Uniform)
base.regularizer = _Namespace(L2DecayRegularizer=lambda regularization_coeff: paddle.regularizer.L2Decay(
    regularization_coeff))
base.compiler = _Namespace(CompiledProgram=paddle.static.CompiledProgram)
base.io.load_vars = paddle.static.io.load_vars

from LAC import LAC, nets  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("train_data")
    parser.add_argument("--iter_num", type=int, default=10)
    parser.add_argument("--thread_num", type=int, default=1)
    parser.add_argument("--test_data")
    args = parser.parse_args()
    lac = LAC(mode="lac")
    model = lac.model
    model.args.model, model.args.train_data, model.args.test_data = "lac", args.train_data, args.test_data
    model.args.epoch, model.args.cpu_num = args.iter_num, args.thread_num
    start, cpu = time.perf_counter(), time.process_time()
    with base.scope_guard(base.core.Scope()):
        nets.do_train(model.args, model.dataset, model.segment_tool)
    lines = sum(1 for line in open(args.train_data, encoding="utf-8") if line.strip())
    print(json.dumps({"engine": f"LAC 2.1.2 LAC.train on paddle {paddle.__version__}", "lines": lines,
                      "iter_num": args.iter_num, "thread_num": args.thread_num,
                      "train_s": round(time.perf_counter() - start, 2),
                      "train_cpu_s": round(time.process_time() - cpu, 2),
                      "threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "CPU_NUM")}}))


if __name__ == "__main__":
    main()
