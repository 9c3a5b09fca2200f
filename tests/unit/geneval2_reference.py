"""A transcription of GenEval 2's reference arithmetic, for the differential test of
``t2ibench.benchmarks.geneval2.metrics``.

Written from facebookresearch/GenEval2 at a6e82d2289e8d418f27f0adee77908b07060eea3, statement for statement:
``evaluation.py`` (``return_numeric_string``, ``send_message_with_image`` from the softmax on, ``vqa_score``,
``tifa``, ``soft_tifa``, the total ``main`` prints) and ``soft_tifa_analysis.py`` (``per_skill_analysis``,
``per_atomicity_analysis``, what ``main`` prints). The reference's plain loops, its ``tokenizer.encode(answer)[0]``
(first token, summed without de-duplication), ``.item()`` on float32 probabilities, the builtin ``sum``, running
``+=`` sums, ``scipy.stats.gmean`` and ``round(x, 2)`` at print are kept as they are; nothing here imports
t2ibench.

The model is replaced by a scripted judge: ``judge(prompt_text, image)`` returns the float32 next-token
probabilities (vocab,) that ``torch.softmax(outputs.scores[0], -1)[0]`` would, and ``judge.tokenizer`` has
``encode(text) -> list[int]`` and ``decode(token_id) -> str`` (what ``qwen_processor.batch_decode([id])[0]``
returns). An image is any key the judge knows (the reference passes a file path).
"""

# the reference's own forms are kept: str.format, dict.keys(), zip without strict, unused unpacked names
# ruff: noqa: UP032, SIM118, B905, RUF059

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import gmean


def return_numeric_string(number):
    match number:
        case "one":
            return "1"
        case "two":
            return "2"
        case "three":
            return "3"
        case "four":
            return "4"
        case "five":
            return "5"
        case "six":
            return "6"
        case "seven":
            return "7"
        case "eight":
            return "8"
        case "nine":
            return "9"
        case "ten":
            return "10"
    return "other"


def send_message_with_image(judge, prompt, image_filepath, answer_list=None):
    probs = judge(prompt, image_filepath)  # the float32 softmax of the first generated position, (vocab,)

    if answer_list:
        lm_prob = 0
        for answer in answer_list:
            ans_token_id = judge.tokenizer.encode(answer)[0]
            lm_prob += probs[ans_token_id].item()

    else:
        lm_prob = None

    argmax_token = judge.tokenizer.decode(int(np.argmax(probs)))
    pred = argmax_token
    return pred, lm_prob


def vqa_score(judge, prompt, image_filepath):
    message_prompt = 'Does this image show "{}"? Answer the question with Yes or No.'.format(prompt)
    pred, ans_prob = send_message_with_image(
        judge, message_prompt.format(prompt), image_filepath, answer_list=["Yes", "yes", " yes", " Yes"]
    )
    return ans_prob


def tifa(judge, vqa_list, image_filepath):
    score = 0
    score_list = []
    for vqa in vqa_list:
        question, answer = vqa
        if question.startswith("How many"):
            answer_list = [
                answer,
                answer.capitalize(),
                " " + answer,
                " " + answer.capitalize(),
                return_numeric_string(answer),
                " " + return_numeric_string(answer),
            ]
        else:
            answer_list = ["Yes", "yes", " yes", " Yes"]
        pred, ans_prob = send_message_with_image(
            judge, "{} Answer in one word.".format(question), image_filepath, answer_list=answer_list
        )
        if pred.lower() in answer_list:
            score += 1
            score_list.append(1)
        else:
            score_list.append(0)
    score = score / len(vqa_list)
    return score, score_list


def soft_tifa(judge, vqa_list, image_filepath):
    score = 0
    score_list = []
    for vqa in vqa_list:
        question, answer = vqa
        if question.startswith("How many"):
            answer_list = [
                answer,
                answer.capitalize(),
                " " + answer,
                " " + answer.capitalize(),
                return_numeric_string(answer),
                " " + return_numeric_string(answer),
            ]
        else:
            answer_list = ["Yes", "yes", " yes", " Yes"]
        pred, ans_prob = send_message_with_image(
            judge, "{} Answer in one word.".format(question), image_filepath, answer_list=answer_list
        )
        score += ans_prob
        score_list.append(ans_prob)
    score = score / len(vqa_list)
    return score, score_list


def evaluate(judge, benchmark_data, image_data, method) -> tuple[list[list[Any]], float, list[str]]:
    """``evaluation.py``'s main after argument parsing: (the score file's lists, the total, the printed lines)."""
    all_score_lists = []
    for d in benchmark_data:
        if d["prompt"] not in image_data.keys():
            raise Exception("Missing filepath for the prompt: {}".format(d["prompt"]))
        image_filepath = image_data[d["prompt"]]
        if method == "vqascore":
            score = vqa_score(judge, d["prompt"], image_filepath)
            score_list = [score]
        elif method == "tifa":
            score, score_list = tifa(judge, d["vqa_list"], image_filepath)
        elif method == "soft_tifa_am" or method == "soft_tifa_gm":
            score, score_list = soft_tifa(judge, d["vqa_list"], image_filepath)
        else:
            raise NotImplementedError
        all_score_lists.append(score_list)

    # Calculating total score
    with np.errstate(divide="ignore"):  # older scipy warns on log(0); the arithmetic is unchanged
        if method == "soft_tifa_gm":
            per_prompt_scores = [gmean(s) for s in all_score_lists]
        else:
            per_prompt_scores = [sum(s) / len(s) for s in all_score_lists]
    total_score = 100 * sum(per_prompt_scores) / len(per_prompt_scores)
    return all_score_lists, total_score, ["Score: {}".format(total_score)]


# -- soft_tifa_analysis.py -------------------------------------------------------------------------------------------


def per_skill_analysis(all_score_lists, all_skill_lists):
    object_score, object_total = 0, 0
    count_score, count_total = 0, 0
    position_score, position_total = 0, 0
    verb_score, verb_total = 0, 0
    attribute_score, attribute_total = 0, 0

    for score_list, skill_list in zip(all_score_lists, all_skill_lists):
        for i in range(len(score_list)):
            if skill_list[i] == "object":
                object_score += score_list[i]
                object_total += 1
            elif skill_list[i] == "count":
                count_score += score_list[i]
                count_total += 1
            elif skill_list[i] == "position":
                position_score += score_list[i]
                position_total += 1
            elif skill_list[i] == "verb":
                verb_score += score_list[i]
                verb_total += 1
            elif skill_list[i] == "attribute":
                attribute_score += score_list[i]
                attribute_total += 1
            else:
                raise Exception("Unrecognized skill")

    object_accuracy = 100 * object_score / object_total
    attribute_accuracy = 100 * attribute_score / attribute_total
    count_accuracy = 100 * count_score / count_total
    position_accuracy = 100 * position_score / position_total
    verb_accuracy = 100 * verb_score / verb_total
    return object_accuracy, attribute_accuracy, count_accuracy, position_accuracy, verb_accuracy


def per_atomicity_analysis(all_score_lists, atomicity_list):
    all_atomicity_dict = {k: {} for k in range(3, 11)}
    for k in all_atomicity_dict:
        all_atomicity_dict[k] = {"correct": 0, "total": 0}

    for score_list, atomicity in zip(all_score_lists, atomicity_list):
        with np.errstate(divide="ignore"):
            all_atomicity_dict[atomicity]["correct"] += gmean(score_list)
        all_atomicity_dict[atomicity]["total"] += 1

    for atomicity in all_atomicity_dict:
        all_atomicity_dict[atomicity]["accuracy"] = (
            (all_atomicity_dict[atomicity]["correct"]) * 100 / all_atomicity_dict[atomicity]["total"]
        )
    return all_atomicity_dict


def analyse(benchmark_data, all_score_lists) -> tuple[dict[str, float], dict[int, float], list[str]]:
    """``soft_tifa_analysis.py``'s main: (per-skill values, per-atomicity values, the printed lines)."""
    atomicity_list = [b["atom_count"] for b in benchmark_data]
    all_skill_lists = [b["skills"] for b in benchmark_data]
    for score_list, skill_list in zip(all_score_lists, all_skill_lists):
        assert len(score_list) == len(skill_list)

    printed = ["Per Atom Type Analysis (Soft-TIFA AM)"]
    object_accuracy, attribute_accuracy, count_accuracy, position_accuracy, verb_accuracy = per_skill_analysis(
        all_score_lists, all_skill_lists
    )
    printed += ["Object:", str(round(object_accuracy, 2))]
    printed += ["Attribute:", str(round(attribute_accuracy, 2))]
    printed += ["Count:", str(round(count_accuracy, 2))]
    printed += ["Position:", str(round(position_accuracy, 2))]
    printed += ["Verb:", str(round(verb_accuracy, 2))]
    printed += [""]

    printed += ["Per Atomicity Analysis (Soft-TIFA GM)"]
    all_atomicity_dict = per_atomicity_analysis(all_score_lists, atomicity_list)
    for atomicity in all_atomicity_dict:
        printed += ["Results for Atomicity={}".format(atomicity)]
        printed += [str(round(all_atomicity_dict[atomicity]["accuracy"], 2))]

    skills = {
        "object": object_accuracy,
        "attribute": attribute_accuracy,
        "count": count_accuracy,
        "position": position_accuracy,
        "verb": verb_accuracy,
    }
    atomicity = {k: v["accuracy"] for k, v in all_atomicity_dict.items()}
    return skills, atomicity, printed
