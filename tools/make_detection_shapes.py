"""Write the generated shapes-detection set as a VOC folder (vision.data.detection_shapes); by default the
zoo card's set (the counts of ``oar reproduce detection``, seed 0).

    python tools/make_detection_shapes.py data/detection_shapes [--train 2000 --val 100 --test 300 --seed 0]
"""
import argparse

from vision.data.detection_shapes import make_detection_shapes
from zoo.reproduce.detection import SET_SIZES


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", help="the VOC folder to write")
    parser.add_argument("--train", type=int, default=SET_SIZES["num_train"], help="training images")
    parser.add_argument("--val", type=int, default=SET_SIZES["num_val"], help="validation images")
    parser.add_argument("--test", type=int, default=SET_SIZES["num_test"], help="test images")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    counts = make_detection_shapes(args.root, args.train, args.val, args.test, args.seed)
    print(" ".join(f"{split}={count}" for split, count in counts.items()))


if __name__ == "__main__":
    main()
