"""Finetune a vision backbone with a new head on an image folder: ``python tools/finetune.py --data_dir DIR …``.

See ``vision.finetune`` (``--help`` lists the options); prints a JSON summary.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vision.finetune import main  # noqa: E402

if __name__ == "__main__":
    main()
