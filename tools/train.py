"""``python tools/train.py -c CONFIG …`` ≡ ``oar train -c CONFIG …``."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from zoo.commands import train_main  # noqa: E402

if __name__ == "__main__":
    train_main()
