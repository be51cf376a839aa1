"""``python tools/train.py …`` ≡ ``oar train …`` (same options, output and exit status)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from zoo.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["train", *sys.argv[1:]], prog="tools/train.py"))
