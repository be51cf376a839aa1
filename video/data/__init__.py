"""Video data: decoding (PyAV, JPEG frame folders), frame sampling, motion modalities (optical flow cached per
video, RGB difference), clip transforms, list-file datasets,
frame features, a generator of labelled synthetic videos, a second renderer's held-out test set, and the generated set's per-frame targets and
backbone features.

Importing this package registers the samplers and clip transforms (``TRANSFORMS``)
and the datasets (``DATASETS``). PyAV and OpenCV are imported only when a video
is read or written.
"""
from .decode import VideoReader, VideoDecodeError, VideoNotFoundError
from .sampling import (segment_indices, clip_indices, uniform_indices, random_indices, SegmentSampler,
                       ClipSampler)
from .transforms import RandomShortSideScale, RandomCrop, MultiScaleCrop, ThreeCrop, TenCrop, FormatClips
from .features import FeatureFileError, load_features, save_features, FeatureExtractor, extract_features
from .datasets import (VideoListError, ListFileNotFoundError, read_list_file, read_class_names, ClipLoader,
                       VideoDataset, SyntheticVideos, HeldoutVideos, FrameFeatureDataset)
from .encode import write_video, write_frame_folder
from .flow import FlowSettings, FlowCache, dense_flow, video_flow
from .modality import MODALITIES, Modality
from .synthetic import MOTIONS, SHAPES, SyntheticSpec, make_synthetic_set, ensure_synthetic_set
from .frame_attributes import SyntheticFrameAttributes
from .synthetic_features import SyntheticFeatures

__all__ = ["VideoReader", "VideoDecodeError", "VideoNotFoundError", "segment_indices", "clip_indices",
           "uniform_indices", "random_indices", "SegmentSampler", "ClipSampler", "RandomShortSideScale", "RandomCrop",
           "MultiScaleCrop", "ThreeCrop", "TenCrop", "FormatClips", "FeatureFileError", "load_features",
           "save_features", "FeatureExtractor", "extract_features", "VideoListError", "ListFileNotFoundError",
           "read_list_file", "read_class_names", "ClipLoader", "VideoDataset", "SyntheticVideos", "HeldoutVideos",
           "FrameFeatureDataset",
           "write_video", "write_frame_folder", "FlowSettings", "FlowCache", "dense_flow", "video_flow", "MODALITIES",
           "Modality", "MOTIONS", "SHAPES", "SyntheticSpec", "make_synthetic_set",
           "ensure_synthetic_set", "SyntheticFrameAttributes", "SyntheticFeatures"]
