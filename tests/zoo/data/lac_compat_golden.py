"""Writes lac_compat_golden.json: Baidu's LAC 2.1.2 (``from LAC import LAC``) on the texts and user dictionaries
of tests/zoo/test_lac_compat.py. Run by the reference environment's Python, which has LAC 2.1.2 on Paddle 2.6:
``$PADDLE_PY tests/zoo/data/lac_compat_golden.py`` (it imports no oar code)."""
import json
import os
import sys
import tempfile

os.environ.setdefault("GLOG_minloglevel", "2")
import paddle                     # noqa: E402
import paddle.base as base        # noqa: E402

sys.modules.setdefault("paddle.fluid", base)
sys.modules.setdefault("paddle.fluid.core", base.core)
paddle.fluid = base
from LAC import LAC               # noqa: E402

TEXTS = ["春天的花开秋天的风以及冬天的落阳", "百度是一家高科技公司", "我爱北京天安门，天安门上太阳升",
         "LAC是个优秀的分词工具", "花开了，/n 是斜杠"]
DICTIONARIES = {
    "whitespace": (None, ["春天/SEASON", "花 开", "秋天的风", "落 阳", "天安门/LOC", "优秀/n 的/u 分词/vn", "京",
                          "/n", "高科技/TECH 公司/ORG", ""]),
    "comma": (",", ["春天/SEASON", "花,开", "秋天的风", "落,阳", "天安门/LOC", "优秀/n,的/u,分词/vn",
                    "高科技/TECH,公司/ORG", "北京 天安门/LOC"]),
}


def main():
    lac = LAC(mode="lac")
    golden = {"texts": TEXTS, "run_list": lac.run(list(TEXTS)), "run_str": lac.run(TEXTS[1]),
              "run_empty_str": lac.run(""), "dictionaries": {}}
    for name, (sep, lines) in DICTIONARIES.items():
        with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8", delete=False) as f:
            f.write("\n".join(lines) + "\n")
        lac = LAC(mode="lac")
        lac.load_customization(f.name, sep=sep)
        golden["dictionaries"][name] = {"sep": sep, "lines": lines, "run": lac.run(list(TEXTS))}
        os.unlink(f.name)
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "lac_compat_golden.json"), "w",
              encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
