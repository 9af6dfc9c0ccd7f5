"""`wamdiff2 bench paired-speed`: checkpoints timed interleaved on the same scenes, ratios with bootstrap intervals."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from wamdiff2_ros.bench.paired_speed import main, speed_ratio, turn_order
from wamdiff2_ros.evaluation.paper_table import PAIRED_KEY, paired_speed_targets
from wamdiff2_ros.model.checkpoints import write_own_threshold


def test_the_first_place_rotates_scene_by_scene():
    assert turn_order(["ar", "b32"], 0) == ["ar", "b32"]
    assert turn_order(["ar", "b32"], 1) == ["b32", "ar"]
    assert turn_order(["ar", "b32"], 2) == ["ar", "b32"]
    assert [turn_order("abc", i)[0] for i in range(4)] == ["a", "b", "c", "a"]


def test_speed_ratio_is_total_tokens_over_total_time_against_the_baseline():
    # model: 30 tokens in 10 ms = 3 tokens/ms; baseline: 20 tokens in 20 ms = 1 token/ms
    r = speed_ratio(np.array([10, 20]), np.array([5, 5]), np.array([10, 10]), np.array([10, 10]), bootstrap=500)
    assert r["ratio"] == pytest.approx(3.0)
    assert r["low"] <= r["ratio"] <= r["high"]
    assert r["low"] >= 2.0 - 1e-9 and r["high"] <= 4.0 + 1e-9  # per-scene ratios are 2 and 4
    same = speed_ratio(np.array([5, 7, 9]), np.array([2, 3, 4]), np.array([5, 7, 9]), np.array([2, 3, 4]))
    assert same == {"ratio": pytest.approx(1.0), "low": pytest.approx(1.0), "high": pytest.approx(1.0)}
    with pytest.raises(ValueError):
        speed_ratio(np.array([1, 2]), np.array([1, 2]), np.array([1]), np.array([1]))


def test_paired_speed_times_both_models_at_their_own_settings(random_models, synth_root, tmp_path):
    root, _, _ = random_models
    student = tmp_path / "b4"
    shutil.copytree(root / "b4", student)
    # its own defaults: commit every mask at once, but the rationale one token per forward
    write_own_threshold(student, 0.0, {"understanding": 1.0}, reuse_kv_tasks=["perception"])
    out = tmp_path / "speed.json"
    rc = main(["--model", f"ar={root / 'ar'}", "--model", f"b4={student}", "--split", str(synth_root),
               "--scenes", "2", "--repeats", "2", "--max-new-tokens", "8", "--bootstrap", "200", "--threads", "1",
               "--cache", str(tmp_path / "cache"), "--json", str(out), "--quiet",
               "--store", str(tmp_path / "store.json"), "--name", "val", "--row", "ar=ar-row", "--row", "b4=b4-row"])
    assert rc == 0
    result = json.loads(out.read_text())
    assert result["baseline"] == "ar" and result["repeats"] == 2 and 1 <= result["scenes"] <= 2
    run = result["runs"][0]
    assert run["threads"] == 1 and "CPU" in run["machine"]
    assert run["settings"]["b4"]["block_size"] == 4 and run["settings"]["b4"]["threshold"] == 0.0
    assert run["settings"]["b4"]["task_thresholds"] == {"understanding": 1.0}
    assert run["settings"]["b4"]["reuse_kv_tasks"] == ["perception"] and run["settings"]["ar"]["reuse_kv_tasks"] == []
    ar, b4 = run["models"]["ar"], run["models"]["b4"]
    for workload in ("planning", "mixed"):  # the baseline against itself
        assert ar["workloads"][workload]["vs_baseline"] == {"ratio": pytest.approx(1.0), "low": pytest.approx(1.0),
                                                            "high": pytest.approx(1.0)}
        v = b4["workloads"][workload]["vs_baseline"]
        assert v["low"] <= v["ratio"] <= v["high"]
    assert all(ar["per_task"][t]["tokens_per_forward"] == pytest.approx(1.0) for t in ar["per_task"])
    assert b4["per_task"]["planning"]["tokens_per_forward"] > 2.0  # threshold 0.0: whole blocks at once
    assert b4["per_task"]["understanding"]["tokens_per_forward"] == pytest.approx(1.0)  # its own 1.0
    mixed = b4["workloads"]["mixed"]
    assert mixed["tokens"] == sum(b4["per_task"][t]["tokens"] for t in b4["per_task"])
    # each scene was decoded twice: the tokens are twice one pass's (greedy decoding repeats itself)
    assert ar["per_task"]["planning"]["tokens"] % 2 == 0 and ar["per_task"]["planning"]["tokens"] > 0
    # kept in the paper-table store, where the speed targets read it for these two rows
    entry = json.loads((tmp_path / "store.json").read_text())["val"][PAIRED_KEY]
    assert entry["rows"] == {"ar": "ar-row", "b4": "b4-row"} and entry["runs"] == result["runs"]
    judged = paired_speed_targets(entry, "b4-row", "ar-row")
    assert [name.split(" tokens/s")[0] for name, _, _ in judged] == ["planning", "mixed three-task"]
    for (_, met, text), workload, target in zip(judged, ("planning", "mixed"), (3.0, 2.0), strict=True):
        v = b4["workloads"][workload]["vs_baseline"]
        assert met == (v["low"] >= target) and f"{v['ratio']:.2f}x" in text
    assert paired_speed_targets(entry, "b4-row", "other-row") == []  # not this pair's timing
    assert paired_speed_targets(entry, "b4-row", "ar-row", threads=2) == []  # not timed at 2 threads


def test_bad_requests_are_refused(random_models, synth_root, tmp_path):
    root, _, _ = random_models
    common = ["--split", str(synth_root), "--json", str(tmp_path / "x.json"), "--quiet"]
    assert main(["--model", f"ar={root / 'ar'}", *common]) == 2  # one model: nothing to pair
    assert main(["--model", f"ar={root / 'ar'}", "--model", f"b4={root / 'b4'}", "--baseline", "gpt", *common]) == 2
    assert main(["--model", f"ar={root / 'ar'}", "--model", f"ar={root / 'b4'}", *common]) == 2
    assert main(["--model", f"ar={root / 'ar'}", "--model", f"b4={tmp_path / 'missing'}", *common]) == 2
    assert main(["--model", f"ar={root / 'ar'}", "--model", f"b4={root / 'b4'}", "--threads", "0", *common]) == 2
    assert main(["--model", f"ar={root / 'ar'}", "--model", f"b4={root / 'b4'}", "--store", "s.json", *common]) == 2
    assert main(["--model", f"ar={root / 'ar'}", "--model", f"b4={root / 'b4'}", "--store", "s.json", "--name", "v",
                 "--row", "gpt=x", *common]) == 2
    assert not (tmp_path / "x.json").exists()
