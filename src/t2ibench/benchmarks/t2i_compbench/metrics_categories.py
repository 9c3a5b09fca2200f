"""T2I-CompBench++'s categories, the key of their mean and the models each category's rule reads (numpy-free: the
store's schema and the config read them)."""

CATEGORIES = ("color", "shape", "texture", "spatial", "3d_spatial", "non_spatial", "numeracy", "complex")
"""The eight categories of the benchmark's tables, in its order (each a ``<category>_val.txt`` prompt file)."""
ATTRIBUTE = ("color", "shape", "texture")
MEAN = "mean"
"""The key of the unweighted mean over the judged categories (t2ibench's summary: the paper reports none)."""

USES = {
    "color": ("vqa",), "shape": ("vqa",), "texture": ("vqa",), "spatial": ("detector",),
    "3d_spatial": ("detector", "depth"), "non_spatial": ("clip",), "numeracy": ("detector",),
    "complex": ("vqa", "detector", "clip"),
}  # fmt: skip
"""The models each category's rule reads."""
