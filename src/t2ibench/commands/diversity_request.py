"""``t2ibench diversity``'s request: its options as one typed class (``t2ibench.options`` declares them), the
defaults a refresh's sections hold read from those sections (``DiversityConfig``, ``ScendiConfig``, the digits
experiment's ``DigitsRequest``). A module of its own: its types come from the config, which the command line imports
only when it builds the parser (``import t2ibench.cli`` stays clear of the numeric core)."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import Annotated, Literal

from t2ibench.config import MAX_SHARDS, BandwidthSetting, DiversityConfig, Runtime, ScendiConfig
from t2ibench.fields import Option, Range
from t2ibench.metrics.checks import DiversityMethod, KernelName, ScendiInverse
from t2ibench.options import range_parser
from t2ibench.requests import DigitsRequest
from t2ibench.specs import MAX_SEED

POSITIVE = Range(0.0, math.inf, open_low=True, open_high=True)
_POSITIVE_FLOAT = range_parser(POSITIVE, float)


def parse_bandwidth(text: str) -> float | str:
    """A σ option: a positive number (embedding units) or 'median' (the median heuristic), as in a config."""
    from t2ibench.diversity import MEDIAN

    if text == MEDIAN:
        return MEDIAN
    try:
        return float(_POSITIVE_FLOAT(text))
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or {MEDIAN!r}: the median heuristic)") from None


def parse_file_bandwidth(text: str) -> float | str:
    """The σ option of a file: a number, 'median', or 'reference' (the reference σ of the file's embedding space)."""
    from t2ibench.diversity import MEDIAN, REFERENCE

    if text in (MEDIAN, REFERENCE):
        return text
    try:
        return float(_POSITIVE_FLOAT(text))
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(
            f"{exc} (or {MEDIAN!r}: the median heuristic; {REFERENCE!r}: the file's embedding space's)"
        ) from None


def parse_alphas(text: str) -> list[str]:
    """The entropy orders of ``--alphas``: comma-separated, blank items dropped (each checked where it is used)."""
    return [part for part in text.split(",") if part.strip()]


@dataclass(frozen=True)
class DiversityRequest:
    """What ``t2ibench diversity`` measures and how: an embedding file (VENDI/RKE, exact and FKEA; Scendi with
    prompts) or the bundled digits example."""

    embeddings: Annotated[str | None, Option(positional=True)] = None
    """(n, d) embeddings as .npy (streamed) or .npz."""
    example: Literal["digits"] | None = None
    """Run a bundled example instead of a file."""
    kernel: KernelName = DiversityConfig.kernel
    """The kernel, as a refresh's evaluators.diversity.kernel."""
    sigma: Annotated[BandwidthSetting | None, Option(parse=parse_file_bandwidth)] = None
    """Gaussian bandwidth: a number (embedding units); 'median', the median heuristic (the file's own: not comparable
    with a leaderboard); or 'reference', the leaderboard's σ of the file's embedding space (a refresh's feature files
    name theirs). Default: reference where the file names its space, else median."""
    method: DiversityMethod = "auto"
    """auto: exact when a cost model says it is no slower than FKEA or under 1 s, else FKEA; the output says which
    and why."""
    rff_dim: Annotated[int | None, Range(1, 1_000_000)] = None
    """Random Fourier frequencies r (2r features)."""
    alphas: Annotated[tuple[str, ...] | None, Option(parse=parse_alphas)] = None
    """Comma-separated entropy orders α > 0, inf allowed."""
    seed: Annotated[int, Range(0, MAX_SEED)] = DiversityConfig.seed
    """Seed for frequencies and subsampling, as a refresh's."""
    shards: Annotated[int, Range(1, MAX_SHARDS)] = DiversityConfig.shards
    """FKEA: accumulate the rows in N interleaved shards, merged, as a refresh does with evaluators.diversity.shards."""
    orthogonal: bool = DiversityConfig.orthogonal
    """FKEA: orthogonal random features (evaluators.diversity.orthogonal)."""
    batch_size: Annotated[int | None, Range(1, 10_000_000)] = None
    """Rows per batch (default: a refresh's FKEA batch; the output states it)."""
    device: str = Runtime.device
    """Where the embedder of a reference σ runs."""
    delta: Annotated[float, Range(0.0, 1.0, open_low=True, open_high=True)] = 0.05
    """Failure probability of the FKEA radius."""
    prompts: Annotated[str | bool | None, Option(bare=True, metavar="PROMPTS.npz")] = None
    """Scendi: prompt embeddings ('embeddings', 'ids') paired by id with the images' 'ids' (with --example digits:
    no value, the bundled prompts naming each digit)."""
    text_sigma: Annotated[float | Literal["median"], Option(parse=parse_bandwidth)] = "median"
    """Scendi: text bandwidth, a number or 'median'."""
    epsilon: Annotated[float, Range(0.0, 1.0, open_low=True, open_high=True)] = ScendiConfig.epsilon
    """Scendi: ridge on C_TT, relative to its trace."""
    inverse: ScendiInverse = ScendiConfig.inverse
    """Scendi: C_TT⁻¹ as a ridge or as the reference repository's pinv cut-off (epsilon unused)."""
    truncation: Annotated[int | None, Range(1, 1_000_000)] = None
    """Also report truncated VENDI-α: the top T eigenvalues with the leftover mass spread over them."""
    modes: Annotated[int | None, Range(1, 10_000), Option(metavar="K")] = None
    """Also find the top K modes (FKEA, and Scendi with --prompts)."""
    top: Annotated[int, Range(1, 10_000)] = 16
    """Samples shown per mode."""
    gallery: Annotated[str | None, Option(metavar="DIR")] = None
    """Write mode galleries (PNG grids + JSON, or Markdown for texts)."""
    n_per_condition: Annotated[int, Range(1, 100_000)] = DigitsRequest.n_per_condition
    """Digits: images per class count."""
    per_prompt: Annotated[int, Range(1, 100_000)] = 100
    """Digits --prompts: pairs per prompt."""
    repeats: Annotated[int | None, Range(1, 1000)] = None
    """Digits: seeded repeats."""
    sigma_scale: Annotated[float, POSITIVE] = DigitsRequest.sigma_scale
    """Digits: σ as a multiple of the median distance."""
    json: str | None = None
    """Also write the results as JSON to this path."""
    quiet: bool = False
    """No progress bar."""
