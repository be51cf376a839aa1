"""``python tools/eval.py -c CONFIG …`` ≡ ``oar eval -c CONFIG …``."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from zoo.commands import eval_main  # noqa: E402

if __name__ == "__main__":
    eval_main()
