"""An independent transcription of T2I-CompBench's reference scoring scripts (Karine-Huang/T2I-CompBench, commit
1b70949: BLIPvqa_eval/BLIP_vqa.py and models/blip_vqa.py, UniDet_eval/2D_spatial_eval.py, 3D_spatial_eval.py,
numeracy_eval.py, CLIPScore_eval/CLIP_similarity.py, 3_in_1_eval/3_in_1.py), kept in the scripts' own control flow
(dictionary boxes, index loops, per-run reward matrices, torch's float32 replaced by numpy's) so that the project's
``t2ibench.benchmarks.t2i_compbench.metrics`` is checked against the reference's logic, not against itself.

Model outputs come in already made (answers, labelled boxes with scores, depth maps): the differential tests script
them. Only the arithmetic between the models and the scores is transcribed.
"""

# ruff: noqa: SIM105, SIM108, RUF015  (the scripts' own control flow is kept on purpose)
from __future__ import annotations

import re
from typing import Any

import numpy as np


# -- BLIP_vqa.py: the per-phrase answers of a run → per-image products → the category score --------------------------
def blip_vqa_run(answers_by_index: list[list[str]], questions_by_index: list[list[str]], np_index: int) -> Any:
    """``main`` of BLIP_vqa.py after the VQA passes: answers_by_index[i][k] is pass i's answer string for image k,
    questions_by_index[i][k] its question ('' where the prompt has no phrase i). Returns (image answers, score)."""
    sample_num = len(answers_by_index[0])
    reward = np.zeros((sample_num, np_index), dtype=np.float32)
    for i in range(np_index):
        r = [{"answer": a} for a in answers_by_index[i]]
        r_tmp = [{"question": q} for q in questions_by_index[i]]
        for k in range(len(r)):
            if r_tmp[k]["question"] != "":
                reward[k][i] = float(r[k]["answer"])
            else:
                reward[k][i] = 1
    reward_final = reward[:, 0].copy()
    for i in range(1, np_index):
        reward_final *= reward[:, i]
    r = [{} for _ in range(sample_num)]
    reward_after = 0
    for k in range(len(r)):
        r[k]["answer"] = f"{reward_final[k].item():.4f}"
        reward_after += float(r[k]["answer"])
    return [x["answer"] for x in r], reward_after / len(r)


def pre_question(question, max_ques_words=50):
    """BLIPvqa_eval/data/utils.py's ``pre_question``, which the VQA dataset applies to every question."""
    question = re.sub(
        r"([.!\"()*#:;~])",
        "",
        question.lower(),
    )
    question = question.rstrip(" ")
    question_words = question.split(" ")
    if len(question_words) > max_ques_words:
        question = " ".join(question_words[:max_ques_words])
    return question


def blip_questions(noun_phrases_per_image: list[list[str]], np_index: int) -> list[str]:
    """``Create_annotation_for_BLIP`` for pass ``np_index``: each image's question (as the dataset passes it on)."""
    out = []
    for chunks in noun_phrases_per_image:
        noun_phrases = []
        for chunk in chunks:
            if chunk not in ["top", "the side", "the left", "the right"]:
                noun_phrases.append(chunk)
        if len(noun_phrases) > np_index:
            out.append(pre_question(f"{noun_phrases[np_index]}?"))
        else:
            out.append("")
    return out


def vqa_prob_answer(p_yes: np.float32, p_no: np.float32) -> str:
    """``vqa_prob`` then ``'{:.4f}'.format(p)`` of models/blip_vqa.py, from the two softmax probabilities."""
    p = np.float32(p_yes / (p_yes + p_no))
    return str(f"{p.item():.4f}")


# -- 2D_spatial_eval.py / 3D_spatial_eval.py -----------------------------------------------------------------------
def determine_position(locality, box1, box2, iou_threshold=0.1, distance_threshold=150, depth_map=None,
                       iou_threshold_3d=0.5):  # fmt: skip
    box1_center = ((box1["x_min"] + box1["x_max"]) / 2, (box1["y_min"] + box1["y_max"]) / 2)
    box2_center = ((box2["x_min"] + box2["x_max"]) / 2, (box2["y_min"] + box2["y_max"]) / 2)
    x_distance = box2_center[0] - box1_center[0]
    y_distance = box2_center[1] - box1_center[1]
    x_overlap = max(0, min(box1["x_max"], box2["x_max"]) - max(box1["x_min"], box2["x_min"]))
    y_overlap = max(0, min(box1["y_max"], box2["y_max"]) - max(box1["y_min"], box2["y_min"]))
    intersection = x_overlap * y_overlap
    box1_area = (box1["x_max"] - box1["x_min"]) * (box1["y_max"] - box1["y_min"])
    box2_area = (box2["x_max"] - box2["x_min"]) * (box2["y_max"] - box2["y_min"])
    union = box1_area + box2_area - intersection
    iou = intersection / union
    score = 0
    if locality in ["next to", "on side of", "near"]:
        if abs(x_distance) < distance_threshold or abs(y_distance) < distance_threshold:
            score = 1
        else:
            score = distance_threshold / max(abs(x_distance), abs(y_distance))
    elif locality == "on the right of":
        if x_distance < 0:
            if abs(x_distance) > abs(y_distance) and iou < iou_threshold:
                score = 1
            elif abs(x_distance) > abs(y_distance) and iou >= iou_threshold:
                score = iou_threshold / iou
        else:
            score = 0
    elif locality == "on the left of":
        if x_distance > 0:
            if abs(x_distance) > abs(y_distance) and iou < iou_threshold:
                score = 1
            elif abs(x_distance) > abs(y_distance) and iou >= iou_threshold:
                score = iou_threshold / iou
        else:
            score = 0
    elif locality == "on the bottom of":
        if y_distance < 0:
            if abs(y_distance) > abs(x_distance) and iou < iou_threshold:
                score = 1
            elif abs(y_distance) > abs(x_distance) and iou >= iou_threshold:
                score = iou_threshold / iou
    elif locality == "on the top of":
        if y_distance > 0:
            if abs(y_distance) > abs(x_distance) and iou < iou_threshold:
                score = 1
            elif abs(y_distance) > abs(x_distance) and iou >= iou_threshold:
                score = iou_threshold / iou
    elif locality == "in front of":
        depth_a = depth_map[int(box1["x_min"]) : int(box1["x_max"]), int(box1["y_min"]) : int(box1["y_max"])]
        depth_b = depth_map[int(box2["x_min"]) : int(box2["x_max"]), int(box2["y_min"]) : int(box2["y_max"])]
        with np.errstate(all="ignore"):
            depth_diff = _mean(depth_a) - _mean(depth_b)
        if iou > iou_threshold_3d:
            if depth_diff > 0:
                score = 1
        elif iou < iou_threshold_3d and iou > 0:
            if depth_diff > 0:
                score = iou / iou_threshold_3d
            else:
                score = 0
        else:
            score = 0
    elif locality == "behind" or locality == "hidden":
        depth_a = depth_map[int(box1["x_min"]) : int(box1["x_max"]), int(box1["y_min"]) : int(box1["y_max"])]
        depth_b = depth_map[int(box2["x_min"]) : int(box2["x_max"]), int(box2["y_min"]) : int(box2["y_max"])]
        with np.errstate(all="ignore"):
            depth_diff = _mean(depth_a) - _mean(depth_b)
        if iou > iou_threshold_3d:
            if depth_diff < 0:
                score = 1
        elif iou < iou_threshold_3d and iou > 0:
            if depth_diff < 0:
                score = iou / iou_threshold_3d
            else:
                score = 0
        else:
            score = 0
    else:
        score = 0
    return score


def _mean(region: np.ndarray) -> float:
    """The script's ``Tensor.mean`` of a slice (NaN when empty). Not transcribed: the script takes a float32 mean on
    the GPU, whose reduction order cannot be reproduced here; both sides take it in float64 (a documented deviation:
    only exact ties can differ)."""
    return float(region.mean(dtype=np.float64)) if region.size else float("nan")


def _box(bb: list[float]) -> dict[str, float]:
    return {"x_min": bb[0], "y_min": bb[1], "x_max": bb[2], "y_max": bb[3]}


def spatial_2d_image(obj: list[str], obj_bounding_box, instance_score, prompt: str, obj1, obj2) -> float:
    """The per-image block of 2D_spatial_eval.py's loop (``obj`` the labels, boxes and scores in detector order;
    ``obj1``/``obj2`` as its noun parse found them)."""
    vocab_spatial = ["on side of", "next to", "near", "on the left of", "on the right of", "on the bottom of",
                     "on the top of", "on top of"]  # fmt: skip
    locality = None
    for word in vocab_spatial:
        if word in prompt:
            locality = word
            break
    person = ["girl", "boy", "man", "woman"]
    if obj1 in person:
        obj1 = "person"
    if obj2 in person:
        obj2 = "person"
    if obj1 in obj and obj2 in obj:
        obj1_pos = obj.index(obj1)
        obj2_pos = obj.index(obj2)
        score = 0.25 * instance_score[obj1_pos] + 0.25 * instance_score[obj2_pos]
        score += determine_position(locality, _box(obj_bounding_box[obj1_pos]), _box(obj_bounding_box[obj2_pos])) / 2
    elif obj1 in obj:
        obj1_pos = obj.index(obj1)
        score = 0.25 * instance_score[obj1_pos]
    elif obj2 in obj:
        obj2_pos = obj.index(obj2)
        score = 0.25 * instance_score[obj2_pos]
    else:
        score = 0
    if score < 0.5:
        score = 0
    return score


def spatial_3d_image(obj: list[str], obj_bounding_box, instance_score, prompt: str, obj1, obj2, depth) -> float:
    """The per-image block of 3D_spatial_eval.py's loop."""
    vocab_spatial_3d = ["in front of", "behind", "hidden"]
    locality = None
    for word in vocab_spatial_3d:
        if word in prompt:
            locality = word
            break
    person = ["girl", "boy", "man", "woman"]
    if obj1 in person:
        obj1 = "person"
    if obj2 in person:
        obj2 = "person"
    obj_str = " ".join(obj)
    obj1_pos = None
    obj2_pos = None
    if obj1 in obj_str and obj2 in obj_str:
        for i in range(len(obj)):
            if obj1 in obj[i]:
                obj1_pos = i
            if obj2 in obj[i]:
                obj2_pos = i
            if (obj1_pos is not None) and (obj2_pos is not None):
                break
        score = 0.25 * instance_score[obj1_pos] + 0.25 * instance_score[obj2_pos]
        score += (
            determine_position(
                locality, _box(obj_bounding_box[obj1_pos]), _box(obj_bounding_box[obj2_pos]), depth_map=depth
            )
            / 2
        )
    elif obj1 in obj_str:
        for i in range(len(obj)):
            if obj1 in obj[i]:
                obj1_pos = i
                break
        score = 0.25 * instance_score[obj1_pos]
    elif obj2 in obj_str:
        for i in range(len(obj)):
            if obj2 in obj[i]:
                obj2_pos = i
                break
        score = 0.25 * instance_score[obj2_pos]
    else:
        score = 0
    return score


# -- numeracy_eval.py -----------------------------------------------------------------------------------------------
def calculate_iou(bbox1, bbox2):
    x1_1, y1_1, x2_1, y2_1 = bbox1
    x1_2, y1_2, x2_2, y2_2 = bbox2
    x1_inter = max(x1_1, x1_2)
    y1_inter = max(y1_1, y1_2)
    x2_inter = min(x2_1, x2_2)
    y2_inter = min(y2_1, y2_2)
    intersection_area = max(0, x2_inter - x1_inter + 1) * max(0, y2_inter - y1_inter + 1)
    area_bbox1 = (x2_1 - x1_1 + 1) * (y2_1 - y1_1 + 1)
    area_bbox2 = (x2_2 - x1_2 + 1) * (y2_2 - y1_2 + 1)
    iou = intersection_area / float(area_bbox1 + area_bbox2 - intersection_area)
    if iou > 0.9 or (intersection_area / float(area_bbox1) > 0.9) or (intersection_area / float(area_bbox2) > 0.9):
        return 1
    return 0


_W2N = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


def word_to_num(word: str) -> int:
    """word2number's ``w2n.word_to_num`` on the words these prompts hold (it raises on 'a'/'an')."""
    if word not in _W2N:
        raise ValueError(
            "No valid number words found! Please enter a valid number word "
            "(eg. two million twenty three thousand and forty nine)"
        )
    return _W2N[word]


def numeracy_image(obj: list[str], obj_bounding_box, doc: list[str], object_s: list[str], object_p: list[str]):
    """The per-image block of numeracy_eval.py's loop (``doc``: the prompt's token texts)."""
    new_obj = []
    new_bbox = []
    for i in range(len(obj)):
        flag = 0
        for j in range(len(new_obj)):
            if calculate_iou(obj_bounding_box[i], new_bbox[j]) and obj[i] == new_obj[j]:
                flag = 1
                break
        if flag == 0:
            new_obj.append(obj[i])
            new_bbox.append(obj_bounding_box[i])
    number = ["a", "an", "one", "two", "three", "four", "five", "six", "seven", "eight"]
    num_obj = []
    my_obj = []
    for i in range(len(doc)):
        if doc[i] in number:
            if (i < len(doc) - 2) and (
                doc[i + 1] + " " + doc[i + 2] in object_s or doc[i + 1] + " " + doc[i + 2] in object_p
            ):
                if doc[i + 1] + " " + doc[i + 2] in object_p and doc[i] not in ["a", "an", "one"]:
                    my_obj.append(object_s[object_p.index(doc[i + 1] + " " + doc[i + 2])])
                    try:
                        num_obj.append(word_to_num(doc[i]))
                    except ValueError:
                        pass
                else:
                    num_obj.append(1)
                    my_obj.append(doc[i + 1] + " " + doc[i + 2])
            elif doc[i + 1] in object_s or doc[i + 1] in object_p:
                if doc[i + 1] in object_s and doc[i] in ["a", "an", "one"]:
                    num_obj.append(1)
                    my_obj.append(doc[i + 1])
                else:
                    my_obj.append(object_s[object_p.index(doc[i + 1])])
                    try:
                        num_obj.append(word_to_num(doc[i]))
                    except ValueError:
                        pass
    score = 0
    weight = 1.0 / len(my_obj)
    for i, my_obj_i in enumerate(my_obj):
        if my_obj_i in ["boy", "girl", "man", "woman"]:
            my_obj_i = "person"
        if my_obj_i == "ship":
            my_obj_i = "boat"
        if my_obj_i == "telivision":
            my_obj_i = "tv"
        if my_obj_i == "goldfish":
            my_obj_i = "fish"
        if my_obj_i == "painting":
            my_obj_i = "picture"
        if my_obj_i not in new_obj:
            for j, obj_i in enumerate(new_obj):
                if my_obj_i in obj_i:
                    new_obj[j] = my_obj_i
        if my_obj_i in new_obj:
            score += 0.5 * weight
            num_det = new_obj.count(my_obj_i)
            if num_det == num_obj[i]:
                score += 0.5 * weight
    return score


# -- 3_in_1.py ------------------------------------------------------------------------------------------------------
def three_in_one_run(attribute_score, spatial_score, action_score, spatial, action, data, num=10):
    """``main`` of 3_in_1.py from its three score lists and its three prompt files' lines (as ``readlines`` gives)."""
    spatial = [i.strip("\n").split(".")[0].lower() for i in spatial]
    action = [i.strip("\n").split(".")[0].lower() for i in action]
    data = [i.strip("\n").split(".")[0].lower() for i in data]
    dataset_num = len(data)
    total_score = np.zeros(num * dataset_num)
    spatial_score = np.array(spatial_score)
    action_score = np.array(action_score)
    attribute_score = np.array(attribute_score)
    for i in range(dataset_num):
        block = slice(i * num, (i + 1) * num)
        if data[i] in spatial:
            total_score[block] = (spatial_score[block] + attribute_score[block]) * 0.5
        elif data[i] in action:
            total_score[block] = (action_score[block] + attribute_score[block]) * 0.5
        else:
            total_score[block] = (attribute_score[block] + spatial_score[block] + action_score[block]) / 3
    total_score = total_score.tolist()
    # `sum(total_score)`: the reference ran Python 3.9, whose sum() adds in order (3.12's is compensated)
    total = 0
    for x in total_score:
        total += x
    return total_score, total / len(total_score)


# -- the parse-reading parts (2D_spatial_eval.py --complex, CLIP_similarity.py --complex) over a scripted parse -----
class _Tok:
    def __init__(self, text: str, pos: str, ws: str) -> None:
        self.text, self.pos_, self.whitespace_ = text, pos, ws


class _Span:
    def __init__(self, toks: list[_Tok]) -> None:
        self.text = "".join(t.text + t.whitespace_ for t in toks[:-1]) + (toks[-1].text if toks else "")


class Doc:
    """The part of a spaCy ``Doc`` the scripts use: indexing, slicing to a span with ``.text``, ``len``, iteration."""

    def __init__(self, tokens: list[tuple[str, str, str]]) -> None:
        self.toks = [_Tok(*t) for t in tokens]

    def __len__(self) -> int:
        return len(self.toks)

    def __iter__(self):
        return iter(self.toks)

    def __getitem__(self, key):
        return _Span(self.toks[key]) if isinstance(key, slice) else self.toks[key]


def complex_objects(doc: Doc):
    """The --complex branch of 2D_spatial_eval.py: (obj1, obj2)."""
    prepositions = ["on top of", "on bottom of", "on the left", "on the right", "next to", "on side of", "near"]
    objects = []
    for i in range(len(doc)):
        if (
            doc[i : i + 3].text in prepositions
            or doc[i : i + 2].text in prepositions
            or doc[i : i + 1].text in prepositions
        ):
            if doc[i : i + 3].text in prepositions:
                k = 3
            elif doc[i : i + 2].text in prepositions:
                k = 2
            elif doc[i : i + 1].text in prepositions:
                k = 1
            for j in range(i - 1, -1, -1):
                if doc[j].pos_ == "NOUN" or doc[j].pos_ == "PROPN":
                    objects.append(doc[j].text)
                    break
            flag = False
            for j in range(i + k, len(doc)):
                if doc[j].pos_ == "NOUN":
                    objects.append(doc[j].text)
                    break
                if j == len(doc) - 1:
                    flag = True
            if flag:
                for j in range(i + k, len(doc)):
                    if (j + 1 < len(doc)) and doc[j].pos_ == "PROPN" and doc[j + 1].pos_ != "PROPN":
                        objects.append(doc[j].text)
                        break
    if len(objects) == 2:
        obj1 = objects[0]
        obj2 = objects[1]
    else:
        obj1 = None
        obj2 = None
    return obj1, obj2


def simple_objects(doc: Doc):
    """The non-complex branch of 2D_spatial_eval.py (and 3D_spatial_eval.py): the first and last NOUN."""
    obj1 = [token.text for token in doc if token.pos_ == "NOUN"][0]
    obj2 = [token.text for token in doc if token.pos_ == "NOUN"][-1]
    return obj1, obj2


def clip_complex_text(doc: Doc) -> str:
    """CLIP_similarity.py --complex: the prompt without its adjectives."""
    return " ".join([token.text for token in doc if token.pos_ != "ADJ"])
