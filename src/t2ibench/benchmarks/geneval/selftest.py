"""The evaluator self-test: how far to trust a GenEval evaluator, measured against construction truth.

Compositor models (``t2ibench.models.compositor``) render a GenEval suite over the classes that have cut-outs; a
faithful one is right on every image, a sloppy one wrong in a known way on a known fraction. The evaluator under
test (any detector and colour classifier from the registries) judges every image, and each verdict is compared with
the image's construction truth: per task, the agreement (accuracy of the verdicts), the false pass rate (images
wrong by construction that the evaluator passes) and the false fail rate (right images it fails), with counts.

``calibrate`` tunes GenEval's two score thresholds for a detector they were not tuned for, against construction
truth, as GenEval tuned them for Mask2Former against human labels: a grid search with k-fold cross-validation over
prompts. ``threshold`` is chosen on the five tasks that read it, ``counting_threshold`` on counting; the held-out
agreement is what the tuned values achieve on prompts they were not fitted on. Detections and colours are computed
once per image and re-judged for every candidate setting.

**Absent objects.** A verdict that matters most for a benchmark is a pass on a prompt whose object is not in the
image. For every judged image the self-test also asks about a class absent by construction: the image's prompt with
one of its objects replaced by a class it does not name (the compositor draws only the prompt's classes, over a
plain or texture background), drawn from all 80 GenEval classes with weight 1 + the number of images on which the
detector reports that class although the prompt does not name it (its own confusions on this image set), seeded.
The probe keeps everything else (count and its exclusion, colour, relation), so it exists in every task where
absence decides the verdict; its truth is "wrong", and a pass is a false pass on an absent object, reported per
task beside the construction agreement. Calibration counts these probes: it maximises correct verdicts on the
construction images and on the probes together (one probe per image, so refusing an absent object weighs as much as
judging the image itself), which punishes a threshold low enough to see objects that are not there.

**Real photographs.** Construction truth says nothing about photos, the images an evaluator meets in use. The
photo truth set (``suite_photos``: bundled photographs and composites of them, each prompt's truth stated
with its reason in a reviewed data file and checked against the photos' inventories) is judged beside the compositor
set and scored separately, so a number that holds on construction truth but not on photos shows as such. Its absent
probes draw only from classes its inventories rule out (never an ``unsure`` one).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from t2ibench.benchmarks.geneval.metrics import TASKS, GenEvalParams, evaluate_detections
from t2ibench.errors import InputError
from t2ibench.io import PNG_COMPRESS_LEVEL, output_dir, write_text_atomic

if TYPE_CHECKING:
    from t2ibench.benchmarks.geneval.suite_photos import PhotoTruth

THRESHOLD_GRID = tuple(round(0.05 * i, 2) for i in range(2, 19))  # 0.10 … 0.90
CONFUSION_FLOOR = THRESHOLD_GRID[0]  # a detection counts as the detector's confusion from the grid's lowest threshold
COUNTING_GRID = tuple(round(0.05 * i, 2) for i in range(4, 20))  # 0.20 … 0.95
TRUTH_SETS = ("compositor", "photos")  # construction truth; the reviewed real-photograph set


@dataclass
class JudgedImage:
    """One judged (image, prompt) with everything needed to re-judge it under other thresholds: a compositor image
    (``model`` its variant) or a photo-set image with one of its prompts (``model`` "photos", ``prompt_index`` the
    image's position in the set, ``sample`` the prompt's)."""

    model: str
    prompt_index: int
    sample: int
    metadata: Mapping[str, Any]
    truth: bool
    error: str | None
    detections: Any  # DetectionSet
    image: Any  # PIL image (colours are classified lazily, once per detection)
    colours: dict[int, str] = field(default_factory=dict)
    probe: Mapping[str, Any] | None = None  # the prompt with one object replaced by an absent class (truth: wrong)
    truth_set: str = "compositor"  # one of TRUTH_SETS
    not_absent: frozenset[str] = frozenset()  # classes the image may show besides the prompt's (never probed)
    group: str = ""  # the photo image's id (its prompts share it)

    @property
    def image_key(self) -> tuple[Any, ...]:
        """Which picture was judged: items with one key share one image (a photo's prompts)."""
        return (self.group,) if self.truth_set == "photos" else (self.model, self.prompt_index, self.sample)


@dataclass(frozen=True)
class Agreement:
    """Verdicts against construction truth for one task (counts of images)."""

    task: str
    images: int
    agree: int
    truth_wrong: int
    false_pass: int
    truth_right: int
    false_fail: int
    absent: int = 0  # probes about an absent object (truth: wrong by construction)
    absent_pass: int = 0  # ... that the evaluator passed: false passes on absent objects

    @property
    def agreement(self) -> float:
        """Fraction of images whose verdict equals the truth (NaN without images)."""
        return self.agree / self.images if self.images else float("nan")

    @property
    def false_pass_rate(self) -> float:
        """Passed images among those wrong by construction (NaN when none is wrong)."""
        return self.false_pass / self.truth_wrong if self.truth_wrong else float("nan")

    @property
    def absent_pass_rate(self) -> float:
        """Passed probes among those about an absent object (NaN without probes)."""
        return self.absent_pass / self.absent if self.absent else float("nan")

    @property
    def false_fail_rate(self) -> float:
        """Failed images among those right by construction (NaN when none is right)."""
        return self.false_fail / self.truth_right if self.truth_right else float("nan")

    def to_dict(self) -> dict[str, Any]:
        """Counts and rates (None for NaN), JSON-ready."""

        def num(x: float) -> float | None:
            return None if x != x else round(x, 4)

        return {
            "task": self.task,
            "images": self.images,
            "agreement": num(self.agreement),
            "false_pass_rate": num(self.false_pass_rate),
            "false_fail_rate": num(self.false_fail_rate),
            "agree": self.agree,
            "truth_wrong": self.truth_wrong,
            "false_pass": self.false_pass,
            "truth_right": self.truth_right,
            "false_fail": self.false_fail,
            "absent": self.absent,
            "absent_pass": self.absent_pass,
            "absent_pass_rate": num(self.absent_pass_rate),
        }


def prompt_classes(record: Mapping[str, Any]) -> set[str]:
    """The classes a GenEval prompt record names (include and exclude clauses)."""
    return {c["class"] for c in [*record.get("include", []), *record.get("exclude", [])]}


def confusions(items: Sequence[JudgedImage], floor: float = CONFUSION_FLOOR) -> Counter[str]:
    """Class → the number of images on which the detector reports it (score ≥ ``floor``) though the image cannot
    show it: objects that are not there. A compositor image shows only its prompt's classes; a photo image the
    classes its inventory allows (``not_absent``: a prompt naming a class does not put it there). An image asked
    several prompts counts once."""
    found: Counter[str] = Counter()
    seen: set[tuple[Any, ...]] = set()
    for item in items:
        if item.image_key in seen:
            continue
        seen.add(item.image_key)
        skip = item.not_absent if item.truth_set == "photos" else prompt_classes(item.metadata)
        found.update({d.label for d in item.detections.detections if d.score >= floor and d.label not in skip})
    return found


def absent_probe(record: Mapping[str, Any], absent: str, clause: int) -> dict[str, Any]:
    """``record`` with include clause ``clause``'s class (and an exclude clause of the same class: counting's) replaced
    by ``absent``; count, colour and relation kept. Its truth on an image without ``absent`` is "wrong"."""
    from t2ibench.benchmarks.geneval.suite import article, plural

    old = record["include"][clause]["class"]
    if absent in prompt_classes(record):
        raise InputError(f"absent_probe: {absent!r} is named by the prompt {record.get('prompt')!r}")
    swap = [dict(c, **{"class": absent}) if c["class"] == old else dict(c) for c in record.get("exclude", [])]
    include = [dict(c, **{"class": absent}) if i == clause else dict(c) for i, c in enumerate(record["include"])]
    text = str(record.get("prompt", ""))
    text = text.replace(f"{article(old)} {old}", f"{article(absent)} {absent}").replace(plural(old), plural(absent))
    probe: dict[str, Any] = {"tag": record["tag"], "include": include, "prompt": text.replace(old, absent)}
    if "exclude" in record:
        probe["exclude"] = swap
    return probe


def add_probes(items: Sequence[JudgedImage], *, seed: int | Sequence[int]) -> Counter[str]:
    """Give every image an absent-object probe (``JudgedImage.probe``): one of its prompt's objects replaced by a
    class the prompt does not name and the image cannot show (``not_absent``), drawn from the 80 GenEval classes
    with weight 1 + the detector's confusions of that class on these images (seeded, in item order). Returns the
    confusion counts."""
    from t2ibench.benchmarks.geneval.suite import vocabulary

    counts = confusions(items)
    classes = vocabulary().classes
    rng = np.random.default_rng(seed)
    for item in items:
        named = prompt_classes(item.metadata) | item.not_absent
        pool = [c for c in classes if c not in named]
        weights = np.array([1.0 + counts[c] for c in pool])
        absent = pool[int(rng.choice(len(pool), p=weights / weights.sum()))]
        clause = int(rng.integers(len(item.metadata["include"])))
        item.probe = absent_probe(item.metadata, absent, clause)
    return counts


def judge(item: JudgedImage, colour: Any, params: GenEvalParams, metadata: Mapping[str, Any] | None = None) -> bool:
    """The evaluator's verdict on one image under ``params`` (colours memoised per detection), for its own prompt or
    for ``metadata`` (an absent-object probe)."""

    def colour_of(requests: list[tuple[str, int]], kept: Mapping[str, Any]) -> dict[tuple[str, int], str]:
        out = {}
        for name, i in requests:
            det = kept[name][i]
            if det.ref not in item.colours:
                (item.colours[det.ref],) = colour.classify(item.image, [(det.box, item.detections.mask(det.ref))], name)
            out[(name, i)] = item.colours[det.ref]
        return out

    record = item.metadata if metadata is None else metadata
    return evaluate_detections(record, item.detections.detections, colour_of, params).correct


def probe_verdicts(items: Sequence[JudgedImage], colour: Any, params: GenEvalParams) -> list[bool | None]:
    """The evaluator's verdict on every image's absent-object probe under ``params`` (None: no probe)."""
    return [None if i.probe is None else judge(i, colour, params, i.probe) for i in items]


def agreement(
    items: Sequence[JudgedImage], verdicts: Sequence[bool], probes: Sequence[bool | None] | None = None
) -> tuple[Agreement, ...]:
    """Per task (TASKS order, tasks without images left out): verdicts against truth, and the probes' passes."""
    probes = list(probes) if probes is not None else [None] * len(items)
    rows = []
    for task in TASKS:
        pairs = [(i.truth, v) for i, v in zip(items, verdicts, strict=True) if i.metadata["tag"] == task]
        if not pairs:
            continue
        asked = [p for i, p in zip(items, probes, strict=True) if i.metadata["tag"] == task and p is not None]
        rows.append(
            Agreement(
                task=task,
                images=len(pairs),
                agree=sum(t == v for t, v in pairs),
                truth_wrong=sum(not t for t, _ in pairs),
                false_pass=sum(v and not t for t, v in pairs),
                truth_right=sum(t for t, _ in pairs),
                false_fail=sum(t and not v for t, v in pairs),
                absent=len(asked),
                absent_pass=sum(bool(p) for p in asked),
            )
        )
    return tuple(rows)


FOLD_SCHEMES = ("prompt", "image")


def fold_key(item: JudgedImage, by: str) -> tuple[Any, ...]:
    """The cross-validation group of ``item``: by ``prompt`` (a compositor prompt across its variants and samples;
    a photo prompt's text across the images it is asked about) or by ``image`` (one compositor image; one photo
    image with all its prompts)."""
    if by == "prompt":
        key = item.prompt_index if item.truth_set == "compositor" else item.metadata["prompt"]
        return (item.truth_set, key)
    if by == "image":
        return (item.truth_set, *item.image_key)
    raise InputError(f"fold_key: by must be one of {FOLD_SCHEMES}; got {by!r}")


@dataclass(frozen=True)
class Calibration:
    """Thresholds fitted on every image, and held-out agreement per truth set under each cross-validation."""

    params: GenEvalParams
    by_prompt: Mapping[str, tuple[Agreement, ...]]  # truth set → held-out agreement, folds over prompts
    by_image: Mapping[str, tuple[Agreement, ...]]  # ... folds over images
    transfer_params: GenEvalParams | None = None  # fitted on the compositor set alone (None: no photos)
    transfer: tuple[Agreement, ...] = ()  # the photos judged with those: construction-fitted, photo-tested


def calibrate(
    items: Sequence[JudgedImage], colour: Any, base: GenEvalParams, *, folds: int = 5, seed: int = 0
) -> Calibration:
    """Fit GenEval's two thresholds on ``items`` and measure them held out (k-fold, over prompts and over images).

    The objective counts correct verdicts on the images *and* on their absent-object probes (``add_probes``; a probe
    is correct when it fails): a threshold that passes objects that are not there loses a point per probe it passes,
    as one that misses objects loses a point per image it fails. Each truth set present (compositor, photos) weighs
    the same — its points divided by the points it could score — so a few dozen reviewed photos are not outvoted by
    hundreds of construction images. Ties go to the lowest value. With photos, ``transfer`` also fits on the
    compositor set alone and judges the photos with that: what construction truth alone would have chosen."""
    if folds < 2:
        raise InputError(f"folds must be ≥ 2; got {folds}")
    counting = [i for i, item in enumerate(items) if item.metadata["tag"] == "counting"]
    other = [i for i, item in enumerate(items) if item.metadata["tag"] != "counting"]

    def verdicts_under(params: GenEvalParams, members: list[int]) -> dict[int, tuple[bool, bool | None]]:
        out = {}
        for i in members:
            item = items[i]
            probe = None if item.probe is None else judge(item, colour, params, item.probe)
            out[i] = (judge(item, colour, params), probe)
        return out

    # every image's verdict under every candidate, computed once (each parameter only matters to its own tasks)
    grid_t = {t: verdicts_under(replace(base, threshold=t), other) for t in THRESHOLD_GRID}
    grid_c = {c: verdicts_under(replace(base, counting_threshold=c), counting) for c in COUNTING_GRID}

    def points(verdict: tuple[bool, bool | None], truth: bool) -> int:
        ok, probe = verdict
        return int(ok == truth) + (0 if probe is None else int(not probe))

    def best(
        grid: Mapping[float, Mapping[int, tuple[bool, bool | None]]], members: list[int], train: set[int]
    ) -> float:
        used = [i for i in members if i in train]
        if not used:
            return min(grid)
        possible: Counter[str] = Counter()
        for i in used:
            possible[items[i].truth_set] += 1 + (items[i].probe is not None)
        scores = {}
        for v, verdicts in grid.items():
            got: Counter[str] = Counter()
            for i in used:
                got[items[i].truth_set] += points(verdicts[i], items[i].truth)
            scores[v] = sum((Fraction(got[s], n) for s, n in possible.items()), Fraction(0))
        top = max(scores.values())
        return min(v for v, s in scores.items() if s == top)  # ties: the lowest value (fewest assumptions)

    def fitted_on(train: set[int]) -> tuple[float, float]:
        return best(grid_t, other, train), best(grid_c, counting, train)

    def verdict_at(i: int, t: float, c: float) -> tuple[bool, bool | None]:
        return grid_c[c][i] if items[i].metadata["tag"] == "counting" else grid_t[t][i]

    def per_set(
        verdicts: Mapping[int, tuple[bool, bool | None]], members: Sequence[int]
    ) -> dict[str, tuple[Agreement, ...]]:
        out = {}
        for name in TRUTH_SETS:
            mine = [i for i in members if items[i].truth_set == name]
            if mine:
                out[name] = agreement([items[i] for i in mine], [verdicts[i][0] for i in mine],
                                      [verdicts[i][1] for i in mine])  # fmt: skip
        return out

    everything = set(range(len(items)))
    held: dict[str, dict[str, tuple[Agreement, ...]]] = {}
    for by in FOLD_SCHEMES:
        keys = sorted({fold_key(item, by) for item in items}, key=repr)
        if len(keys) < folds:
            raise InputError(f"calibrate: {len(keys)} {by} groups cannot make {folds} folds")
        rng = np.random.default_rng(seed)
        fold_of = {k: int(f) for k, f in zip(keys, rng.permutation(len(keys)) % folds, strict=True)}
        out: dict[int, tuple[bool, bool | None]] = {}
        for f in range(folds):
            test = {i for i, item in enumerate(items) if fold_of[fold_key(item, by)] == f}
            t, c = fitted_on(everything - test)
            out.update({i: verdict_at(i, t, c) for i in test})
        held[by] = per_set(out, range(len(items)))
    t, c = fitted_on(everything)
    photos = [i for i, item in enumerate(items) if item.truth_set == "photos"]
    transfer_params: GenEvalParams | None = None
    transfer: tuple[Agreement, ...] = ()
    if photos and len(photos) < len(items):
        tt, tc = fitted_on(everything - set(photos))
        transfer_params = replace(base, threshold=tt, counting_threshold=tc)
        transfer = per_set({i: verdict_at(i, tt, tc) for i in photos}, photos)["photos"]
    return Calibration(
        params=replace(base, threshold=t, counting_threshold=c),
        by_prompt=held["prompt"],
        by_image=held["image"],
        transfer_params=transfer_params,
        transfer=transfer,
    )


@dataclass(frozen=True)
class SetResult:
    """One truth set's verdicts with the given thresholds: per-task agreement, the detector's confusions there and
    the absent classes whose probes passed."""

    name: str  # "compositor" or "photos"
    images: int  # distinct images judged
    judged: int  # (image, prompt) pairs judged (the compositor asks one prompt per image)
    agreement: tuple[Agreement, ...]
    confusions: Mapping[str, int] = field(default_factory=dict)  # the detector's most frequent absent classes
    passed_absent: Mapping[str, int] = field(default_factory=dict)  # absent class → probes passed

    def totals(self) -> dict[str, Any]:
        """Counts and rates over every task: agreement, false pass, false fail and false pass on absent objects."""
        return totals(self.agreement)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "images": self.images,
            "judged": self.judged,
            "totals": self.totals(),
            "confusions": dict(self.confusions),
            "passed_absent": dict(self.passed_absent),
            "agreement": [a.to_dict() for a in self.agreement],
        }


def totals(rows: Sequence[Agreement]) -> dict[str, Any]:
    """Counts summed over ``rows`` and the rates they give (None where undefined), JSON-ready."""
    summed = Agreement(
        "all",
        *(sum(getattr(a, f) for a in rows) for f in
          ("images", "agree", "truth_wrong", "false_pass", "truth_right", "false_fail", "absent", "absent_pass")),
    )  # fmt: skip
    out = summed.to_dict()
    del out["task"]
    return out


@dataclass(frozen=True)
class SelfTestReport:
    """What a self-test measured: the evaluator, each truth set's verdicts with the given thresholds, and (with
    ``--calibrate``) the fitted thresholds with their held-out agreement."""

    evaluator: dict[str, Any]
    classes: tuple[str, ...]
    variants: tuple[str, ...]
    params: GenEvalParams
    sets: Mapping[str, SetResult]
    calibration: Calibration | None = None
    photo_truth: Mapping[str, Any] | None = None  # name, version, sha256, images, prompts of the photo set judged
    seed: int = 0

    @property
    def calibrated(self) -> GenEvalParams | None:
        """The fitted thresholds (None without calibration)."""
        return self.calibration.params if self.calibration else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        cal = self.calibration
        return {
            "evaluator": self.evaluator,
            "params": vars(self.params),
            "seed": self.seed,
            "classes": list(self.classes),
            "variants": list(self.variants),
            "photo_truth": dict(self.photo_truth) if self.photo_truth else None,
            "sets": {name: result.to_dict() for name, result in self.sets.items()},
            "calibrated": vars(cal.params) if cal else None,
            "held_out": None
            if cal is None
            else {
                "by_prompt": {k: [a.to_dict() for a in v] for k, v in cal.by_prompt.items()},
                "by_image": {k: [a.to_dict() for a in v] for k, v in cal.by_image.items()},
                "transfer": None
                if cal.transfer_params is None
                else {"params": vars(cal.transfer_params), "photos": [a.to_dict() for a in cal.transfer]},
            },
        }


def _set_result(name: str, items: Sequence[JudgedImage], colour: Any, params: GenEvalParams,
                confused: Counter[str]) -> SetResult:  # fmt: skip
    verdicts = [judge(i, colour, params) for i in items]
    probes = probe_verdicts(items, colour, params)
    passed = Counter(_replaced(i.metadata, i.probe) for i, ok in zip(items, probes, strict=True) if ok and i.probe)
    return SetResult(
        name=name,
        images=len({i.image_key for i in items}),
        judged=len(items),
        agreement=agreement(items, verdicts, probes),
        confusions=dict(confused.most_common(10)),
        passed_absent=dict(passed.most_common()),
    )


def judge_photos(
    detector: Any, truth: PhotoTruth, out: Path | None = None, *, show_progress: bool = False
) -> list[JudgedImage]:
    """Every (image, prompt) of the photo truth set, detected once per image (composites saved under ``out``)."""
    from t2ibench.benchmarks.geneval.suite_photos import compose
    from t2ibench.progress import progress

    items: list[JudgedImage] = []
    with progress(len(truth.images), "photos", enabled=show_progress, unit="img") as bar:
        for n, image in enumerate(truth.images):
            picture = compose(image, truth)
            if out is not None:
                picture.save(
                    output_dir(out) / f"{n:03d}-{image.id.replace('/', '_')}.png", compress_level=PNG_COMPRESS_LEVEL
                )
            (found,) = detector.detect([picture])
            memo: dict[int, str] = {}  # colours per detection, shared by the image's prompts
            for k, prompt in enumerate(image.prompts):
                items.append(
                    JudgedImage(
                        "photos", n, k, prompt.record, prompt.truth, prompt.reason, found, picture, memo,
                        truth_set="photos", not_absent=truth.not_absent(image), group=image.id,
                    )
                )  # fmt: skip
            bar.update(1)
    return items


def run_selftest(
    detector: Any,
    colour: Any,
    params: GenEvalParams,
    out: str | Path,
    *,
    per_task: int = 20,
    images_per_prompt: int = 2,
    variants: Sequence[str] = ("faithful", "sloppy:0.5"),
    seed: int = 0,
    suite_seed: int = 43,
    calibrate_folds: int | None = None,
    photos: PhotoTruth | None = None,
    show_progress: bool = False,
) -> SelfTestReport:
    """Compose a suite over the compositor's classes with each variant into ``out``, judge every image with
    ``detector`` and ``colour``, compare with construction truth; judge the photo truth set ``photos`` (None: skip)
    likewise; with ``calibrate_folds``, also tune the thresholds."""
    from t2ibench.benchmarks.geneval.suite import generate_suite
    from t2ibench.config import GeneratorConfig
    from t2ibench.images import load_rgb
    from t2ibench.models.compositor import CompositorGenerator, compositor_classes, read_truth

    classes = compositor_classes()
    suite = list(enumerate(generate_suite(seed=suite_seed, per_task=per_task, classes=classes)))
    folder = output_dir(out)
    items: list[JudgedImage] = []
    for variant in variants:
        spec = GeneratorConfig(backend="compositor", model=variant, images_per_prompt=images_per_prompt, seed=seed)
        target = folder / variant.replace(":", "-")
        records = CompositorGenerator(spec, show_progress=show_progress).generate(suite, target)
        truth = read_truth(target)
        metadata = dict(suite)
        for record in records:
            image = load_rgb(record.path)[0]
            (found,) = detector.detect([image])
            t = truth[(record.prompt_index, record.sample)]
            items.append(
                JudgedImage(
                    variant, record.prompt_index, record.sample, metadata[record.prompt_index], t["correct"],
                    t["error"], found, image,
                )
            )  # fmt: skip
    photo_items = (
        [] if photos is None else judge_photos(detector, photos, folder / "photos", show_progress=show_progress)
    )
    confused = {"compositor": add_probes(items, seed=seed)}
    if photo_items:
        confused["photos"] = add_probes(photo_items, seed=[seed, 1])
    everything = items + photo_items
    calibration = calibrate(everything, colour, params, folds=calibrate_folds, seed=seed) if calibrate_folds else None
    sets = {"compositor": _set_result("compositor", items, colour, params, confused["compositor"])}
    if photo_items:
        sets["photos"] = _set_result("photos", photo_items, colour, params, confused["photos"])
    return SelfTestReport(
        evaluator={"detector": detector.describe(), "colour": colour.describe()},
        classes=classes,
        variants=tuple(variants),
        params=params,
        sets=sets,
        calibration=calibration,
        photo_truth=None
        if photos is None
        else {
            "name": photos.name,
            "version": photos.version,
            "sha256": photos.sha256,
            "images": len(photos.images),
            "prompts": photos.prompts,
        },
        seed=seed,
    )


def _replaced(record: Mapping[str, Any], probe: Mapping[str, Any]) -> str:
    """The absent class a probe put in place of one of ``record``'s objects."""
    named = prompt_classes(record)
    return str(next(c["class"] for c in probe["include"] if c["class"] not in named))


SET_TITLES = {"compositor": "Compositor images (construction truth)", "photos": "Real photographs (reviewed truth)"}


def render_selftest(report: SelfTestReport) -> str:
    """Markdown: the evaluator, per truth set the per-task agreement with counts, and the calibration if any."""

    def pct(x: float | None) -> str:
        return "—" if x is None else f"{100 * x:.1f}%"

    def table(rows: Sequence[Agreement]) -> list[str]:
        lines = [
            "| task | judged | agreement | false pass | false fail | false pass, absent object |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for a in (*rows, Agreement("all", **{k: v for k, v in totals(rows).items() if isinstance(v, int)})):
            d = a.to_dict()
            name = "**all**" if a.task == "all" else a.task
            lines.append(
                f"| {name} | {a.images} | {pct(d['agreement'])} ({a.agree}/{a.images}) "
                f"| {pct(d['false_pass_rate'])} ({a.false_pass}/{a.truth_wrong}) "
                f"| {pct(d['false_fail_rate'])} ({a.false_fail}/{a.truth_right}) "
                f"| {pct(d['absent_pass_rate'])} ({a.absent_pass}/{a.absent}) |"
            )
        return lines

    def listing(counts: Mapping[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"

    det, col = report.evaluator["detector"], report.evaluator["colour"]
    lite = "lite" in (det.get("evaluator"), col.get("evaluator"))
    p = report.params
    md = [
        "# Evaluator self-test",
        "",
        f"Detector `{det.get('backend')}`, colour `{col.get('backend')}`"
        + (" — **lite evaluator, not comparable with published GenEval**" if lite else "")
        + ". Every judged image is also asked about an absent object: its prompt with one object replaced by a "
        "class the image cannot show (weighted toward the detector's own confusions on that set); a pass there is "
        "a false pass on an absent object.",
        "",
        f"## With threshold {p.threshold:g}, counting threshold {p.counting_threshold:g}",
    ]
    for name, result in report.sets.items():
        if name == "compositor":
            about = (f"{result.images} compositor images ({', '.join(report.variants)}) over "
                     f"{', '.join(report.classes)}; truth by construction.")  # fmt: skip
        else:
            pt = report.photo_truth or {}
            about = (
                f"{result.images} images of bundled photographs and composites, {result.judged} prompts; truth "
                f"reviewed ({pt.get('name')} v{pt.get('version')}, sha256 {str(pt.get('sha256'))[:12]}…)."
            )
        md += [
            "",
            f"### {SET_TITLES.get(name, name)}",
            "",
            about + f" Detector confusions (images): {listing(result.confusions)}. "
            f"Absent classes passed: {listing(result.passed_absent)}.",
            "",
            *table(result.agreement),
        ]
    cal = report.calibration
    if cal is not None:
        c = cal.params
        md += [
            "",
            f"## Calibrated: threshold {c.threshold:g}, counting threshold {c.counting_threshold:g}",
            "",
            "Fitted on every image, maximising correct verdicts on the images and on their absent-object probes "
            "together, each truth set weighing the same. Held-out agreement: the thresholds fitted on the other "
            "folds judge each fold.",
        ]
        for title, held in (("folds over prompts", cal.by_prompt), ("folds over images", cal.by_image)):
            for name, rows in held.items():
                md += ["", f"### {SET_TITLES.get(name, name)}, held out ({title})", "", *table(rows)]
        if cal.transfer_params is not None:
            t = cal.transfer_params
            md += [
                "",
                f"### Real photographs judged with thresholds fitted on the compositor set alone "
                f"({t.threshold:g} / {t.counting_threshold:g})",
                "",
                *table(cal.transfer),
            ]
    return "\n".join(md) + "\n"


def write_selftest(report: SelfTestReport, out: str | Path) -> list[Path]:
    """selftest.json, selftest.md and, when calibrated, calibrated.yaml (a geneval thresholds block to paste into
    a config, labelled with the evaluator it was calibrated for)."""
    folder = output_dir(out)
    files = [
        write_text_atomic(folder / "selftest.json", json.dumps(report.to_dict(), indent=2) + "\n"),
        write_text_atomic(folder / "selftest.md", render_selftest(report)),
    ]
    if report.calibration is not None:
        det, col = report.evaluator["detector"]["backend"], report.evaluator["colour"]["backend"]
        c = report.calibration.params
        judged = " + ".join(f"{r.judged} {name}" for name, r in report.sets.items())
        text = (
            f"# GenEval thresholds calibrated by `t2ibench selftest --calibrate` for detector {det} + colour {col}\n"
            f"# against construction and reviewed truth ({judged} judged); see selftest.md for held-out "
            "agreement.\n"
            f"threshold: {c.threshold}\ncounting_threshold: {c.counting_threshold}\n"
        )
        files.append(write_text_atomic(folder / "calibrated.yaml", text))
    return files
