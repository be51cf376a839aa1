"""``python tools/bench.py NAME [--quick] [--out FILE]`` ≡ ``oar bench NAME …``: a benchmark suite's JSON."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from zoo.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]], prog="tools/bench.py"))
