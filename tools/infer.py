"""``python tools/infer.py -c CONFIG …`` ≡ ``oar infer -c CONFIG …``."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from zoo.commands import infer_main  # noqa: E402

if __name__ == "__main__":
    infer_main()
