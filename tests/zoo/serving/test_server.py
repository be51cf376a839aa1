"""``oar serve`` end to end: one real server (four small shipped models) answers every route over HTTP,
merges concurrent requests into batches, and refuses each kind of bad input with its status and field."""
import asyncio
import base64
import json

import pytest

from .conftest import ServerProcess, httpx

MODELS = ("lac_pku", "senta_bow", "simnet_bow_pointwise", "tsm_synth")
TEXTS = ["今天是个好日子", "我爱北京天安门", "人民日报发表社论", "这家店的服务很好，下次还来"]


@pytest.fixture(scope="module")
def server(clip_folder):
    served = ServerProcess(*MODELS, "--max_instances", "16", "--max_body_mb", "0.05", "--max_text_len", "300",
                           "--max_delay_ms", "20", "--allow_path", str(clip_folder))
    yield served
    code, _, err = served.stop()
    assert code == 0, err
    assert "Traceback" not in err, err


def post(server, path, body=None, content=None, headers=None):
    return httpx.post(server.url + path, json=body, content=content, headers=headers, timeout=60)


def predict(server, name, instances):
    return post(server, f"/v1/models/{name}:predict", {"instances": instances})


def metric(text, name, **labels):
    """The value of one sample of the Prometheus exposition ``text`` (0 when absent)."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith(name + "{"):
            sample, value = line.rsplit(" ", 1)
            got = ",".join(sorted(sample[len(name) + 1:-1].split(",")))
            if got == wanted:
                return float(value)
    return 0.0


def test_health_readiness_and_model_listing(server):
    assert httpx.get(server.url + "/healthz").json() == {"status": "ok"}
    ready = httpx.get(server.url + "/readyz")
    assert ready.status_code == 200 and ready.json()["ready"] is True
    models = httpx.get(server.url + "/v1/models").json()["models"]
    assert [m["name"] for m in models] == list(MODELS)
    assert {m["name"]: m["task"] for m in models}["simnet_bow_pointwise"] == "matching"
    assert all(len(m["version"]) == 64 and m["state"] == "ready" for m in models)
    one = httpx.get(server.url + "/v1/models/senta_bow").json()
    assert one["ready"] is True and one["task"] == "sentiment"
    missing = httpx.get(server.url + "/v1/models/nope")
    assert missing.status_code == 404 and "lac_pku" in missing.json()["detail"]


def test_every_task_predicts_and_paddlehub_route_agrees(server, clip_folder):
    lac = predict(server, "lac_pku", TEXTS[:2])
    assert lac.status_code == 200
    assert ["".join(p["words"]) for p in lac.json()["predictions"]] == TEXTS[:2]
    hub = post(server, "/predict/lac_pku", {"text": TEXTS[:2]}).json()
    assert hub["status"] == "0" and hub["msg"] == "" and hub["results"] == lac.json()["predictions"]

    senta = predict(server, "senta_bow", TEXTS).json()["predictions"]
    assert len(senta) == 4 and all(p["label"] in ("negative", "positive") and 0 <= p["score"] <= 1 for p in senta)
    assert post(server, "/predict/senta_bow", {"text": TEXTS}).json()["results"] == senta

    pairs = [[TEXTS[0], TEXTS[1]], [TEXTS[2], TEXTS[2]]]
    simnet = predict(server, "simnet_bow_pointwise", pairs).json()["predictions"]
    assert len(simnet) == 2 and all(set(p) == {"score", "label"} for p in simnet)
    hub = post(server, "/predict/simnet_bow_pointwise", {"text_1": [a for a, _ in pairs], "text_2": [b for _, b in pairs]})
    assert hub.json()["results"] == simnet

    clip = (clip_folder / "clip.mp4").read_bytes()
    by_bytes = predict(server, "tsm_synth", [{"b64": base64.b64encode(clip).decode()}])
    assert by_bytes.status_code == 200, by_bytes.text
    topk = by_bytes.json()["predictions"][0]["topk"]
    assert topk and abs(sum(p for _, p in topk) - 1) < 1e-3
    by_path = predict(server, "tsm_synth", [{"path": "clip.mp4"}])
    assert by_path.json()["predictions"] == by_bytes.json()["predictions"]


def test_concurrent_requests_are_merged_and_each_gets_its_own_results(server):
    texts = [f"{i}号文件：{TEXTS[i % 4] * (1 + i % 3)}" for i in range(24)]

    async def fire():
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            return await asyncio.gather(*(client.post("/v1/models/lac_pku:predict", json={"instances": [t]})
                                          for t in texts))

    before = httpx.get(server.url + "/metrics").text
    answers = asyncio.run(fire())
    assert all(a.status_code == 200 for a in answers)
    assert ["".join(a.json()["predictions"][0]["words"]) for a in answers] == texts
    after = httpx.get(server.url + "/metrics").text

    def merged(text):       # batches of more than one instance so far
        return (metric(text, "oar_serving_batch_size_count", model="lac_pku")
                - metric(text, "oar_serving_batch_size_bucket", model="lac_pku", le="1.0"))
    assert merged(after) > merged(before)
    assert metric(after, "oar_serving_requests_total", model="lac_pku", code="200") >= 24


def test_metrics_count_requests_errors_latency_and_queue_depth(server):
    predict(server, "senta_bow", [TEXTS[0]])
    predict(server, "senta_bow", [1])
    text = httpx.get(server.url + "/metrics").text
    assert metric(text, "oar_serving_requests_total", model="senta_bow", code="200") >= 1
    assert metric(text, "oar_serving_errors_total", model="senta_bow", code="400") >= 1
    assert metric(text, "oar_serving_errors_total", model="senta_bow", code="200") == 0
    assert metric(text, "oar_serving_request_latency_seconds_count", model="senta_bow") >= 2
    assert "oar_serving_queue_depth{" in text


BAD_INPUTS = [  # (route, model, body as bytes or JSON, status, fragments of the detail)
    ("v1", "lac_pku", b"{not json", 400, ["body", "not JSON"]),
    ("v1", "lac_pku", b"\xff\xfe\x00garbage", 400, ["body", "not JSON"]),
    ("v1", "lac_pku", b"[" * 20000, 400, ["body", "not JSON"]),
    ("v1", "lac_pku", [1, 2], 400, ["body", "JSON object"]),
    ("v1", "lac_pku", {"inputs": ["x"]}, 400, ["instances", "missing"]),
    ("v1", "lac_pku", {"instances": "今天"}, 400, ["instances", "list"]),
    ("v1", "lac_pku", {"instances": []}, 400, ["instances", "empty"]),
    ("v1", "lac_pku", {"instances": ["a"] * 17}, 400, ["instances", "17", "16"]),
    ("v1", "lac_pku", {"instances": ["好", 3]}, 400, ["instances[1]", "string"]),
    ("v1", "lac_pku", {"instances": [None]}, 400, ["instances[0]", "string"]),
    ("v1", "lac_pku", {"instances": [["好"]]}, 400, ["instances[0]", "string"]),
    ("v1", "lac_pku", {"instances": ["好" * 301]}, 400, ["instances[0]", "301", "300"]),
    ("v1", "lac_pku", b'{"instances": ["\\ud800"]}', 400, ["instances[0]", "Unicode"]),
    ("v1", "senta_bow", {"instances": [{"b64": "aGk="}]}, 400, ["instances[0]", "string"]),
    ("v1", "simnet_bow_pointwise", {"instances": ["only one text"]}, 400, ["instances[0]", "pair"]),
    ("v1", "simnet_bow_pointwise", {"instances": [["a", "b", "c"]]}, 400, ["instances[0]", "pair"]),
    ("v1", "simnet_bow_pointwise", {"instances": [["a", 5]]}, 400, ["instances[0][1]", "string"]),
    ("v1", "tsm_synth", {"instances": ["clip.mp4"]}, 400, ["instances[0]", "b64"]),
    ("v1", "tsm_synth", {"instances": [{"b64": "%%%"}]}, 400, ["instances[0].b64", "base64"]),
    ("v1", "tsm_synth", {"instances": [{"b64": ""}]}, 400, ["instances[0].b64", "empty"]),
    ("v1", "tsm_synth", {"instances": [{"b64": base64.b64encode(b"not a video" * 50).decode()}]}, 400,
     ["instances[0]", "video"]),
    ("v1", "tsm_synth", {"instances": [{"b64": 7}]}, 400, ["instances[0].b64", "base64"]),
    ("v1", "tsm_synth", {"instances": [{"path": "../../etc/passwd"}]}, 403, ["instances[0].path", "outside"]),
    ("v1", "tsm_synth", {"instances": [{"path": "/etc/passwd"}]}, 403, ["instances[0].path", "outside"]),
    ("v1", "tsm_synth", {"instances": [{"path": "missing.mp4"}]}, 400, ["instances[0].path", "not exist"]),
    ("v1", "nope", {"instances": ["x"]}, 404, ["nope", "lac_pku", "tsm_synth"]),
    ("v1", "lac_pku", {"instances": ["好" * 100] * 16, "pad": "x" * 60000}, 413, ["body", "limit"]),
    ("hub", "lac_pku", {"instances": ["x"]}, 400, ["text", "missing"]),
    ("hub", "lac_pku", {"text": [5]}, 400, ["text[0]", "string"]),
    ("hub", "simnet_bow_pointwise", {"text_1": ["a", "b"], "text_2": ["c"]}, 400, ["text_2", "pair"]),
    ("hub", "tsm_synth", {"text": ["x"]}, 400, ["text", "/v1/models"]),
]


@pytest.mark.parametrize("route, model, body, status, fragments", BAD_INPUTS,
                         ids=[f"{r}-{m}-{s}-{i}" for i, (r, m, _, s, _) in enumerate(BAD_INPUTS)])
def test_bad_input_gets_its_status_and_names_the_field(server, route, model, body, status, fragments):
    path = f"/v1/models/{model}:predict" if route == "v1" else f"/predict/{model}"
    if isinstance(body, bytes):
        answer = post(server, path, content=body, headers={"content-type": "application/json"})
    else:
        answer = post(server, path, body)
    assert answer.status_code == status, answer.text
    payload = answer.json()
    assert set(payload) == {"error", "detail"}
    assert "Traceback" not in answer.text and "/tmp" not in answer.text and "oar-serve" not in answer.text
    for fragment in fragments:
        assert fragment in payload["detail"], payload


def test_a_bad_instance_fails_only_its_own_request(server):
    good = [f"第{i}句话很好" for i in range(6)]

    async def fire():
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            bad = client.post("/v1/models/tsm_synth:predict",
                              json={"instances": [{"path": "clip.mp4"}, {"b64": base64.b64encode(b"x" * 99).decode()}]})
            return await asyncio.gather(bad, *(client.post("/v1/models/tsm_synth:predict",
                                                           json={"instances": [{"path": "clip.mp4"}]})
                                               for _ in good))

    bad, *rest = asyncio.run(fire())
    assert bad.status_code == 400 and "instances[1]" in bad.json()["detail"], bad.text
    assert all(r.status_code == 200 for r in rest)


def test_unknown_routes_and_methods_answer_json(server):
    answer = httpx.get(server.url + "/nowhere")
    assert answer.status_code == 404 and answer.json()["error"] == "not found"
    answer = httpx.delete(server.url + "/v1/models")
    assert answer.status_code == 405 and set(answer.json()) == {"error", "detail"}


def test_results_are_json_serialisable_for_odd_texts(server):
    odd = [" ", "\x00\x01", "😀😀", "\u200b", "a\tb\nc", "ＡＢＣ１２３", "<script>", "好" * 300]
    for model in ("lac_pku", "senta_bow"):
        answer = predict(server, model, odd)
        assert answer.status_code == 200, answer.text
        assert len(answer.json()["predictions"]) == len(odd)
    answer = predict(server, "simnet_bow_pointwise", [[t, t] for t in odd])
    assert answer.status_code == 200, answer.text
    json.dumps(answer.json())
