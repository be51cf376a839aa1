"""``python tools/eval.py …`` ≡ ``oar eval …`` (same options, output and exit status)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from zoo.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["eval", *sys.argv[1:]], prog="tools/eval.py"))
