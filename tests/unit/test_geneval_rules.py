"""Every rule and reason of the GenEval verdict engine, on hand-built detections."""

import json

import pytest

from t2ibench.benchmarks.geneval.metrics import (
    COLORS,
    RELATIONS,
    TASKS,
    Detection,
    GenEvalParams,
    box_iou,
    colour_requests,
    evaluate_detections,
    judge,
    keep_detections,
    observed_relation,
    relations,
)
from t2ibench.errors import InputError


def det(label, x, y, w=10, h=10, score=0.95, ref=-1):
    return Detection(label=label, box=(x, y, x + w, y + h), score=score, ref=ref)


def run(metadata, detections, colours=None, params=None):
    params = params or GenEvalParams()
    kept = keep_detections(detections, metadata["tag"], params)
    return judge(metadata, kept, colours or {}, params)


SINGLE = {"tag": "single_object", "include": [{"class": "cat", "count": 1}], "prompt": "a photo of a cat"}
TWO = {
    "tag": "two_object",
    "include": [{"class": "cat", "count": 1}, {"class": "dog", "count": 1}],
    "prompt": "a photo of a cat and a dog",
}
COUNT = {
    "tag": "counting",
    "include": [{"class": "cup", "count": 3}],
    "exclude": [{"class": "cup", "count": 4}],
    "prompt": "a photo of three cups",
}
COLOR = {"tag": "colors", "include": [{"class": "car", "count": 1, "color": "red"}], "prompt": "a photo of a red car"}
POSITION = {
    "tag": "position",
    "include": [{"class": "dog", "count": 1}, {"class": "cat", "count": 1, "position": ["left of", 0]}],
    "prompt": "a photo of a cat left of a dog",
}
ATTR = {
    "tag": "color_attr",
    "include": [{"class": "car", "count": 1, "color": "red"}, {"class": "bus", "count": 1, "color": "blue"}],
    "prompt": "a photo of a red car and a blue bus",
}


# -- keeping detections ------------------------------------------------------------------------------------------


def test_threshold_is_strictly_greater_than():
    kept = keep_detections([det("cat", 0, 0, score=0.3), det("cat", 5, 5, score=0.31)], "single_object")
    assert [d.score for d in kept["cat"]] == [0.31]


def test_counting_prompts_use_the_higher_threshold():
    dets = [det("cup", i * 20, 0, score=s) for i, s in enumerate([0.95, 0.91, 0.85, 0.5])]
    assert len(keep_detections(dets, "counting")["cup"]) == 2
    assert len(keep_detections(dets, "two_object")["cup"]) == 4


def test_kept_objects_are_sorted_by_score_and_capped():
    dets = [det("cup", i, 0, score=0.31 + i / 100) for i in range(30)]
    kept = keep_detections(dets, "single_object")["cup"]
    assert len(kept) == 16
    assert [d.score for d in kept] == sorted((d.score for d in dets), reverse=True)[:16]
    assert len(keep_detections(dets, "single_object", GenEvalParams(max_objects=3))["cup"]) == 3


def test_overlap_deduplication_is_off_by_default_and_greedy_when_on():
    dets = [det("cat", 0, 0, score=0.9), det("cat", 1, 1, score=0.8), det("cat", 50, 50, score=0.7)]
    assert len(keep_detections(dets, "single_object")["cat"]) == 3
    kept = keep_detections(dets, "single_object", GenEvalParams(max_overlap=0.5))["cat"]
    assert [d.score for d in kept] == [0.9, 0.7]


def test_iou_uses_inclusive_pixel_areas():
    assert box_iou((0, 0, 9, 9), (0, 0, 9, 9)) == 1.0
    assert box_iou((0, 0, 9, 9), (10, 0, 19, 9)) == 0.0
    assert box_iou((0, 0, 9, 9), (5, 0, 14, 9)) == pytest.approx(50 / 150)  # 5×10 of 10×10 + 10×10 − 50


def test_classes_with_nothing_kept_are_absent():
    assert keep_detections([det("cat", 0, 0, score=0.1)], "single_object") == {}


# -- include / exclude ---------------------------------------------------------------------------------------------


def test_single_object_present_and_missing():
    assert run(SINGLE, [det("cat", 0, 0)]).correct
    v = run(SINGLE, [det("dog", 0, 0)])
    assert not v.correct
    assert v.reason == "expected cat>=1, found 0"


def test_two_objects_report_each_missing_class():
    v = run(TWO, [])
    assert v.reason == "expected cat>=1, found 0\nexpected dog>=1, found 0"
    assert run(TWO, [det("cat", 0, 0), det("dog", 50, 0)]).correct


def test_counting_exact_count_passes_fewer_and_more_fail():
    three = [det("cup", i * 20, 0) for i in range(3)]
    assert run(COUNT, three).correct
    v = run(COUNT, three[:2])
    assert v.reason == "expected cup>=3, found 2"
    v = run(COUNT, [*three, det("cup", 100, 0)])
    assert v.reason == "expected cup<4, found 4"
    v = run(COUNT, [*three, det("cup", 100, 0, score=0.85)])  # below the counting threshold: not counted
    assert v.correct


def test_exclude_counts_all_kept_objects_up_to_the_cap():
    many = [det("cup", i * 5, 0) for i in range(20)]
    assert run(COUNT, many).reason == "expected cup<4, found 16"


# -- colours ------------------------------------------------------------------------------------------------------


def test_colour_requests_only_for_clauses_with_enough_objects():
    kept = keep_detections([det("car", 0, 0), det("car", 30, 0, score=0.9)], "colors")
    assert colour_requests(COLOR, kept) == [("car", 0)]
    assert colour_requests(COLOR, {}) == []
    assert colour_requests(SINGLE, keep_detections([det("cat", 0, 0)], "single_object")) == []


def test_colour_correct_and_wrong_with_tally_in_colour_list_order():
    assert run(COLOR, [det("car", 0, 0)], {("car", 0): "red"}).correct
    v = run(COLOR, [det("car", 0, 0)], {("car", 0): "white"})
    assert v.reason == "expected red car>=1, found 0 red; and 1 white"


def test_colour_tally_lists_every_colour_found_in_fixed_order():
    meta = {"tag": "colors", "include": [{"class": "car", "count": 3, "color": "red"}], "prompt": "p"}
    dets = [det("car", i * 20, 0) for i in range(3)]
    v = run(meta, dets, {("car", 0): "white", ("car", 1): "red", ("car", 2): "blue"})
    assert v.reason == "expected red car>=3, found 1 red; and 1 red, 1 blue, 1 white"


def test_only_the_first_count_objects_are_coloured():
    dets = [det("car", 0, 0, score=0.99), det("car", 30, 0, score=0.5)]
    assert run(COLOR, dets, {("car", 0): "red"}).correct  # the weaker blue car is never asked


def test_missing_object_short_circuits_the_colour_check():
    v = run(COLOR, [])
    assert v.reason == "expected car>=1, found 0"


def test_colour_attribution_checks_both_objects():
    dets = [det("car", 0, 0), det("bus", 50, 0)]
    assert run(ATTR, dets, {("car", 0): "red", ("bus", 0): "blue"}).correct
    v = run(ATTR, dets, {("car", 0): "blue", ("bus", 0): "red"})
    assert v.reason == ("expected red car>=1, found 0 red; and 1 blue\nexpected blue bus>=1, found 0 blue; and 1 red")


def test_missing_colour_is_a_clear_error():
    with pytest.raises(InputError, match=r"no colour given for \('car', 0\)"):
        run(COLOR, [det("car", 0, 0)], {})


# -- positions ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((0, 0, 10, 10), (100, 0, 110, 10), ("left of",)),
        ((100, 0, 110, 10), (0, 0, 10, 10), ("right of",)),
        ((0, 0, 10, 10), (0, 100, 10, 110), ("above",)),  # image y grows downward
        ((0, 100, 10, 110), (0, 0, 10, 10), ("below",)),
        ((0, 0, 10, 10), (100, 100, 110, 110), ("left of", "above")),  # diagonal: both, in fixed order
        ((0, 0, 10, 10), (1, 1, 11, 11), ()),  # overlapping centres: shrunk offset < 1e-3
        ((0, 0, 10, 10), (20, 5, 30, 15), ("left of",)),
    ],
)
def test_relations_from_boxes(a, b, expected):
    assert relations(a, b) == expected


def test_relation_margin_shrinks_the_offset_but_divides_by_the_unshrunk_norm():
    # offset (−30, −25); margin 0.1·(20+20)=4 in x and 0.1·(60+60)=12 in y → shrunk (−26, −13); norm 39.05
    a, b = (0, 0, 20, 60), (30, 25, 50, 85)
    assert relations(a, b) == ("left of",)  # x −0.67 < −0.5; y −0.33 not above
    assert relations(a, b, margin=0.0) == ("left of", "above")  # x −0.77, y −0.64
    # a margin that swallows both components leaves no relation at all
    assert relations(a, b, margin=1.0) == ()


def test_position_correct_wrong_and_reason():
    assert run(POSITION, [det("dog", 100, 0), det("cat", 0, 0)]).correct
    v = run(POSITION, [det("dog", 0, 0), det("cat", 100, 0)])
    assert v.reason == "expected cat left of target, found right of target"
    v = run(POSITION, [det("dog", 0, 0), det("cat", 1, 1)])
    assert v.reason == "expected cat left of target, found  target"  # no relation: empty list, as the reference


def test_position_without_target_and_without_object():
    v = run(POSITION, [det("cat", 0, 0)])
    assert v.reason == "expected dog>=1, found 0\nno target for cat to be left of"
    v = run(POSITION, [det("dog", 0, 0)])
    assert v.reason == "expected cat>=1, found 0"


def test_every_object_must_relate_to_every_target():
    meta = {
        "tag": "position",
        "include": [{"class": "dog", "count": 2}, {"class": "cat", "count": 1, "position": ["left of", 0]}],
        "prompt": "p",
    }
    dets = [det("dog", 100, 0), det("dog", -100, 0, score=0.9), det("cat", 0, 0)]
    assert run(meta, dets).reason == "expected cat left of target, found right of target"
    dets[1] = det("dog", 200, 0, score=0.9)
    assert run(meta, dets).correct


def test_failed_colour_clause_is_no_position_target():
    meta = {
        "tag": "position",
        "include": [
            {"class": "dog", "count": 1, "color": "black"},
            {"class": "cat", "count": 1, "position": ["left of", 0]},
        ],
        "prompt": "p",
    }
    v = run(meta, [det("dog", 100, 0), det("cat", 0, 0)], {("dog", 0): "white"})
    assert v.reason == "expected black dog>=1, found 0 black; and 1 white\nno target for cat to be left of"


def test_position_is_not_checked_when_the_colour_already_failed():
    meta = {
        "tag": "position",
        "include": [
            {"class": "dog", "count": 1},
            {"class": "cat", "count": 1, "color": "red", "position": ["left of", 0]},
        ],
        "prompt": "p",
    }
    v = run(meta, [det("dog", 0, 0), det("cat", 100, 0)], {("cat", 0): "blue"})
    assert v.reason == "expected red cat>=1, found 0 red; and 1 blue"


# -- plumbing ----------------------------------------------------------------------------------------------------


def test_evaluate_detections_asks_for_exactly_the_needed_colours():
    asked = []

    def colour_of(requests, kept):
        asked.append(list(requests))
        return dict.fromkeys(requests, "red")

    v = evaluate_detections(ATTR, [det("car", 0, 0), det("bus", 50, 0), det("cat", 9, 9)], colour_of)
    assert asked == [[("car", 0), ("bus", 0)]]
    assert v.reason == "expected blue bus>=1, found 0 blue; and 1 red"
    assert evaluate_detections(SINGLE, [det("cat", 0, 0)]).correct  # no colours needed, none asked
    with pytest.raises(InputError, match="needs colours but no colour classifier"):
        evaluate_detections(COLOR, [det("car", 0, 0)])


def test_details_json_lists_kept_boxes_with_scores():
    v = run(SINGLE, [det("cat", 1, 2, w=3, h=4, score=0.5), det("dog", 0, 0, score=0.1)])
    assert json.loads(v.details_json()) == {"cat": [[1, 2, 4, 6, 0.5]]}


def test_params_are_validated():
    with pytest.raises(InputError, match="threshold: must be in"):
        GenEvalParams(threshold=1.5)
    with pytest.raises(InputError, match="max_overlap"):
        GenEvalParams(max_overlap=0)
    with pytest.raises(InputError, match="max_objects"):
        GenEvalParams(max_objects=0)


def test_engine_constants_match_the_suite_data():
    from t2ibench.benchmarks.geneval.suite import TASKS as SUITE_TASKS
    from t2ibench.benchmarks.geneval.suite import vocabulary

    vocab = vocabulary()
    assert vocab.colors == COLORS
    assert vocab.relations == RELATIONS
    assert SUITE_TASKS == TASKS


# -- facts kept for failure analysis -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("detections", "expected"),
    [
        ([det("cat", 0, 50), det("dog", 100, 50)], "left of"),  # cat (first-named) left of dog, as asked
        ([det("cat", 100, 50), det("dog", 0, 50)], "right of"),
        ([det("cat", 0, 0), det("dog", 100, 100)], "left of+above"),  # diagonal: both relations, fixed order
        ([det("cat", 50, 50), det("dog", 51, 50)], "no relation"),  # centres within the margin
        ([det("cat", 0, 50)], "object missing"),
        ([det("dog", 0, 50)], "object missing"),
    ],
)
def test_the_found_relation_is_the_first_named_objects_to_its_target(detections, expected):
    verdict = run(POSITION, detections)
    assert verdict.relation == expected
    assert verdict.correct == ("left of" in expected.split("+"))  # a diagonal also satisfies "left of"


def test_the_found_relation_uses_the_top_objects_and_the_margin():
    # two cats: the top-scoring one decides, as GenEval's first kept object
    dets = [det("cat", 200, 50, score=0.99), det("cat", 0, 50, score=0.5), det("dog", 100, 50)]
    assert run(POSITION, dets).relation == "right of"
    close = [det("cat", 0, 50), det("dog", 12, 50)]
    assert run(POSITION, close).relation == "left of"
    assert run(POSITION, close, params=GenEvalParams(position_margin=0.6)).relation == "no relation"
    assert observed_relation(SINGLE, {"cat": tuple(dets[:1])}) is None


def test_classified_colours_are_kept_per_class_and_rank():
    kept_two = [det("car", 0, 0, ref=0), det("car", 50, 0, ref=1), det("bus", 100, 0, ref=2)]
    verdict = run(ATTR, kept_two, {("car", 0): "blue", ("bus", 0): "red"})
    assert not verdict.correct
    # ranks past the clause's count were never classified: None, not a guess
    assert verdict.colours_json() == {"car": ["blue", None], "bus": ["red"]}
    assert run(SINGLE, [det("cat", 0, 0)]).colours_json() == {}
