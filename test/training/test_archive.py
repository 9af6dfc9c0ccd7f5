"""The repository's record of runs (docs/runs) and the scores store: what RESULTS.md and the cards outlive runs/ with."""

from __future__ import annotations

import json
import threading

import pytest

from wamdiff2_ros.evaluation.run_records import archive_runs, read_json, run_file, targets_info


def _run(root, name, steps=25, targets=None):
    run = root / name
    run.mkdir(parents=True)
    (run / "train_summary.json").write_text(json.dumps({"stage": "adapt", "block_size": 32, "steps": steps,
                                                        "wall_time_s": 90.0, "final_loss": 0.5}))
    (run / "train_config.json").write_text(json.dumps({"stage": "adapt", "data": {"targets": targets or ""}}))
    (run / "train_log.csv").write_text("step,loss\n" + "".join(f"{s},{1 / s:.4f}\n" for s in range(1, steps + 1)))
    return run


def test_archive_keeps_summary_config_a_thinned_log_and_the_targets_header(tmp_path):
    runs, archive = tmp_path / "runs", tmp_path / "archive"
    targets = tmp_path / "kd.json"
    targets.write_text(json.dumps({"version": 1, "teacher": "t", "kept": 2, "rejected": 1, "answers": {"a": "b"}}))
    _run(runs, "v4-x", steps=25, targets=str(targets))
    (runs / "unfinished").mkdir()  # no summary: not a finished run, not archived
    assert archive_runs(runs, ["v4-x", "unfinished", "absent"], archive, stride=10) == ["v4-x"]
    log = (archive / "v4-x" / "train_log.csv").read_text().splitlines()
    assert log[0] == "step,loss" and [row.split(",")[0] for row in log[1:]] == ["10", "20", "25"]  # last row kept
    header = json.loads((archive / "targets" / "kd.json").read_text())
    assert header["kept"] == 2 and "answers" not in header

    # runs/ gone: every reader falls back to the archive
    (runs / "v4-x" / "train_summary.json").unlink()
    assert run_file(runs, "v4-x", "train_summary.json", archive) == archive / "v4-x" / "train_summary.json"
    assert read_json(runs, "v4-x", "train_summary.json", archive)["steps"] == 25
    assert run_file(runs, "v4-x", "train_config.json", archive) == runs / "v4-x" / "train_config.json"  # runs/ first
    assert read_json(runs, "absent", "train_summary.json", archive) == {}
    targets.unlink()
    assert targets_info(targets, archive)["teacher"] == "t"
    assert targets_info(tmp_path / "other.json", archive) == {}


def test_store_updates_from_parallel_scorers_all_land(tmp_path):
    from wamdiff2_ros.evaluation.ladder import update_store

    store = tmp_path / "docs" / "results.json"
    threads = [threading.Thread(target=update_store, args=(store, lambda r, i=i: r.__setitem__(f"row{i}", i)))
               for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert json.loads(store.read_text()) == {f"row{i}": i for i in range(8)}
    assert update_store(store, lambda r: r.pop("row0"))["row7"] == 7 and "row0" not in json.loads(store.read_text())


@pytest.fixture
def shipped_runs(random_models, tmp_path):
    """A runs folder holding the two checkpoints the final comparison scores (random weights)."""
    root, vla, _ = random_models
    runs = tmp_path / "runs"
    vla.with_block_size(1).save(runs / "tiny-ar-long")
    vla.with_block_size(32).save(runs / "v3-b32-kd-cf2")
    return runs


def test_final_comparison_scores_every_heldout_sample_and_judges_the_targets_there(shipped_runs, synth_root, tmp_path):
    from wamdiff2_ros.evaluation.ladder_eval import main
    from wamdiff2_ros.evaluation.ladder_report import FINAL

    store, out = tmp_path / "results.json", tmp_path / "docs" / "RESULTS.md"
    base = ["--runs", str(shipped_runs), "--heldout", str(synth_root), "--store", str(store), "--images",
            str(tmp_path / "img"), "--archive", str(tmp_path / "archive"), "--limit", "1", "--only"]
    assert main([*base, "--final", "ar_long", "v3_b32_cf2", "v4_b32_w1", "--final-speed", "1", "--out", str(out)]) == 0
    final = json.loads(store.read_text())[FINAL]
    assert set(final["rows"]) == {"ar_long", "v3_b32_cf2"}  # v4 has no checkpoint here: skipped, not invented
    # every held-out sample (3 per task in this log), whatever --limit says for the ladder table
    assert final["rows"]["ar_long"]["samples"] == {"planning": 3, "understanding": 3, "perception": 3}
    assert set(final["speed_threads"]["1"]) == {"AR continued (B=1)", "v3 B=32 certainty, continued"}
    text = out.read_text()
    assert "## Final comparison: every held-out sample" in text and "(1 prompts spread evenly over the split)" in text
    assert final["speed_sample"] == "spread" and final["speed_prompts"] == 1
    judged = text[text.index("### Targets of the issue (this table)"):]
    assert "- v3: seq-KD + certainty (0.5), continued +2700 steps: " in judged and "interleaved timing, 1 thread" in judged

    wall = final["rows"]["ar_long"]["eval_wall_s"]
    assert main([*base, "--final", "ar_long"]) == 0  # already scored: kept, not redone
    assert json.loads(store.read_text())[FINAL]["rows"]["ar_long"]["eval_wall_s"] == wall
    assert main([*base, "--final", "no_such_row"]) == 2


def test_cards_are_rebuilt_from_the_archive_when_runs_are_gone(tmp_path, monkeypatch):
    """A shipped card names each stage's exact command and the relabel step even after runs/ was deleted."""
    import wamdiff2_ros.evaluation.run_records as archive_module
    from wamdiff2_ros.evaluation.ladder_cards import relabel_row
    from wamdiff2_ros.training.ship import command

    runs, archive = tmp_path / "runs", tmp_path / "archive"
    targets = tmp_path / "kd.json"
    targets.write_text(json.dumps({"version": 1, "teacher": "ckpt/ar", "tasks": ["planning"], "kept": 7,
                                   "rejected": 1, "wall_s": 12.0, "answers": {}}))
    run = _run(runs, "v4-x", targets=str(targets))
    (run / "train_config.json").write_text(json.dumps({"stage": "adapt", "block_size": 32, "steps": 99, "lr": 2e-4,
                                                       "certainty_weight": 1.0, "data": {"targets": str(targets)}}))
    archive_runs(runs, ["v4-x"], archive)
    monkeypatch.setattr(archive_module, "ARCHIVE", archive)
    before = command(runs, "v4-x", "adapt", "adapt_b32.yaml"), relabel_row(runs, "v4-x", "adapt_b32.yaml")
    (runs / "v4-x" / "train_config.json").unlink()
    targets.unlink()
    after = command(runs, "v4-x", "adapt", "adapt_b32.yaml"), relabel_row(runs, "v4-x", "adapt_b32.yaml")
    assert after == before
    assert "steps=99" in after[0] and "certainty_weight=1.0" in after[0] and "7 answers kept, 1 rejected" in after[1]
