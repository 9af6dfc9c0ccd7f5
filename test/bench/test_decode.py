"""`wamdiff2 bench decode`: engine variants side by side, summed over repeats, parity with the reference."""

from __future__ import annotations

import json

import pytest

from wamdiff2_ros import cli
from wamdiff2_ros.bench.decode import parse_engine


@pytest.mark.parametrize(("spec", "parsed"), [
    ("fast", ("fast", "auto", "auto", True)),
    ("reference", ("reference", "auto", "auto", True)),
    ("fast:sdpa+nographs", ("fast", "sdpa", False, True)),
    ("fast:flashinfer+graphs", ("fast", "flashinfer", True, True)),
    ("fast:sdpa+full", ("fast", "sdpa", "auto", False)),
    ("fast:sdpa+nographs+full", ("fast", "sdpa", False, False)),
])
def test_bench_engine_variants_parse(spec, parsed):
    assert parse_engine(spec) == parsed


@pytest.mark.parametrize("spec", ["turbo", "fast:xformers", "fast:sdpa+graphs+nographs", "fast:sdpa+full+full",
                                  "fast:sdpa+fast"])
def test_bench_engine_variants_refused(spec):
    with pytest.raises(ValueError):
        parse_engine(spec)


def test_bench_decode_compares_variants_over_repeats(tmp_path, capsys):
    """`wamdiff2 bench decode` runs each variant --repeats times and reports one summed row per variant."""
    out = tmp_path / "decode.json"
    base = ["bench", "decode", "--model", "tiny", "--blocks", "1,4", "--engines", "reference,fast,fast:sdpa+full",
            "--samples", "1", "--max-new-tokens", "8", "--threads", "1", "--json", str(out)]
    assert cli.main([*base, "--repeats", "2"]) == 0
    report = json.loads(out.read_text())
    assert report["repeats"] == 2 and report["parity"] is True
    rows = {(r["engine"], r["block_size"]): r for r in report["rows"]}
    assert len(rows) == len(report["rows"]) == 6
    assert rows[("fast:sdpa+full", 4)]["engine_resolved"] == "fast/sdpa+full"
    assert rows[("fast", 4)]["engine_resolved"] == "fast/sdpa"
    for row in rows.values():
        assert row["generated_tokens"] == 2 * 8 and row["runs"] == 2  # two runs of one 8-token prompt
    assert "fast/sdpa+full" in capsys.readouterr().out
    assert cli.main([*base, "--repeats", "0"]) == 2
