"""Write the shapes image folder (circles, squares, triangles): ``python tools/make_shapes.py DIR [--per_class N] …``.

See ``vision.data.shapes``; writes DIR/train/<class>/* and DIR/val/<class>/*.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vision.data.shapes import main  # noqa: E402
from zoo.cli import run_tool  # noqa: E402

if __name__ == "__main__":
    sys.exit(run_tool(main))
