"""Real-data check (FKEA paper, Figure 2): diversity of digit pixels rises with the number of classes."""

import itertools

import numpy as np
import pytest

from t2ibench.examples.digits import (
    DigitsSweepConfig,
    digits_class_sweep,
    load_digits_pixels,
    stratified_sample,
)

pytestmark = pytest.mark.slow  # the full digits sweep: ~15 s


@pytest.fixture(scope="module")
def sweep():
    return digits_class_sweep(DigitsSweepConfig(), show_progress=False)


@pytest.mark.parametrize("column", ["vendi_exact", "vendi_fkea", "rke_exact", "rke_fkea"])
def test_diversity_rises_monotonically_with_classes(sweep, column):
    means = [getattr(r, column).mean for r in sweep.rows]
    assert all(b > a for a, b in itertools.pairwise(means)), means
    assert sweep.is_monotone(column)


def test_fkea_tracks_exact_within_a_tenth(sweep):
    for row in sweep.rows:
        assert row.vendi_fkea.mean == pytest.approx(row.vendi_exact.mean, rel=0.1)
        assert row.rke_fkea.mean == pytest.approx(row.rke_exact.mean, rel=0.1)


def test_one_class_is_far_less_diverse_than_ten(sweep):
    assert sweep.rows[-1].vendi_exact.mean > 3 * sweep.rows[0].vendi_exact.mean


def test_is_monotone_detects_a_decrease(sweep):
    """The monotonicity check itself can fail."""
    from dataclasses import replace

    from t2ibench.examples.digits import MeanSd

    rows = list(sweep.rows)
    rows[5] = replace(rows[5], vendi_exact=MeanSd(rows[4].vendi_exact.mean - 1, 0.0))
    assert not replace(sweep, rows=tuple(rows)).is_monotone("vendi_exact")


def test_stratified_sample_is_balanced_and_seeded():
    _, y = load_digits_pixels()
    idx = stratified_sample(y, 3, 170, np.random.default_rng(1))
    assert len(set(idx)) == 170
    assert sorted(np.bincount(y[idx])) == [56, 57, 57]
    np.testing.assert_array_equal(idx, stratified_sample(y, 3, 170, np.random.default_rng(1)))


def test_sweep_refuses_more_samples_than_a_class_holds():
    with pytest.raises(ValueError, match="cannot draw"):
        digits_class_sweep(DigitsSweepConfig(n_per_condition=500, repeats=1), show_progress=False)


def test_readme_excerpt_matches_the_computed_table(sweep):
    """The numbers quoted in README.md are the ones `make run` prints (to the printed precision)."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    quoted = {
        int(m.group(1)): [float(x) for x in re.findall(r"(\d+\.\d+) ±", m.group(0))]
        for m in re.finditer(r"^\| (\d+) \| 170 \|.*$", readme, flags=re.M)
    }
    assert set(quoted) == {1, 10}
    for row in sweep.rows:
        if row.classes in quoted:
            computed = [row.vendi_exact.mean, row.vendi_fkea.mean, row.rke_exact.mean, row.rke_fkea.mean]
            assert computed == pytest.approx(quoted[row.classes], abs=0.011)


def test_scendi_separates_prompt_following_from_prompt_ignoring():
    """Real data: both 'models' produce equally diverse digit images, but only one follows its prompts."""
    from t2ibench.examples.digits import DigitsScendiConfig, digits_scendi_comparison

    result = digits_scendi_comparison(DigitsScendiConfig(), show_progress=False)
    follow, ignore = result.rows
    assert (follow.model, ignore.model) == ("prompt-following", "prompt-ignoring")
    assert follow.image_vendi.mean == pytest.approx(ignore.image_vendi.mean, rel=0.05)
    assert follow.scendi.mean < 0.7 * ignore.scendi.mean
    assert follow.model_share.mean < ignore.model_share.mean - 0.1
    assert follow.prompt_vendi.mean > 3 * ignore.prompt_vendi.mean
    # the numbers README.md and docs/metrics.md quote are these
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    vendi, scendi_follow, scendi_ignore = map(
        float, re.search(r"VENDI-1 ≈ (\d+) for both\) but\s+Scendi ≈ (\d+) vs ≈ (\d+)", readme).groups()
    )
    assert follow.image_vendi.mean == pytest.approx(vendi, abs=1.5)
    assert follow.scendi.mean == pytest.approx(scendi_follow, abs=1)
    assert ignore.scendi.mean == pytest.approx(scendi_ignore, abs=1)


def test_digits_modes_are_digit_classes():
    """FKEA's top three modes on digit pixels are digit classes (0, 3, 1): ≥ 3/4 of each mode's top 12 agree.

    (Mode 0 also collects a few round 3s, 8s and 9s; the fourth mode, not tested, mixes 0 and 7.)
    """
    from t2ibench.examples.digits import digits_modes

    found = digits_modes(k=3, top=12, with_scendi=False)
    _, y = load_digits_pixels()
    for mode in found.fkea.modes:
        counts = np.bincount(y[list(mode.top)])
        assert counts.max() >= 9, (mode.index, counts)
