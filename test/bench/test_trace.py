"""`wamdiff2 bench trace`: the commit order of one held-out answer, step by step."""

from __future__ import annotations

import argparse
import json

from wamdiff2_ros.bench.trace import trace, trace_arguments


def test_trace_prints_every_step_and_writes_commits(random_models, synth_root, tmp_path, capsys):
    root, _, _ = random_models
    parser = argparse.ArgumentParser()
    trace_arguments(parser)
    out = tmp_path / "trace.json"
    base = ["--heldout", str(synth_root), "--cache", str(root / "cache"), "--max-new-tokens", "8"]
    assert trace(parser.parse_args(["--model", str(root / "b4"), *base, "--json", str(out)])) == 0
    text = capsys.readouterr().out
    report = json.loads(out.read_text())
    assert report["task"] == "planning" and report["summary"]["tokens"] == len(report["commits"]) >= 8
    assert text.count("block 0 step") == report["summary"]["steps_per_block"][0]
    assert "committed above the threshold" in text
    assert trace(parser.parse_args(["--model", str(root / "b4"), *base, "--index", "99"])) == 2
    assert trace(parser.parse_args(["--model", str(tmp_path / "missing"), *base])) == 2
    assert trace(parser.parse_args(["--model", str(root / "b4"), *base, "--block-size", "-1"])) == 2
