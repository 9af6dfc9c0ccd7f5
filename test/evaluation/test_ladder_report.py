"""docs/RESULTS.md and the shipped cards rebuild byte for byte from docs/results.json, docs/runs/ and the templates."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from wamdiff2_ros.evaluation import ladder_index, paper_card
from wamdiff2_ros.evaluation.ladder_index import load_index
from wamdiff2_ros.evaluation.ladder_report import main
from wamdiff2_ros.evaluation.markdown_template import fill
from wamdiff2_ros.evaluation.paper_table import load_registry, row_of
from wamdiff2_ros.training import ship, ship_paper

REPO = Path(__file__).resolve().parents[2]
PAGES = ("docs/RESULTS.md", "checkpoints/wamdiff2-tiny-generalist/README.md", "checkpoints/wamdiff2-tiny-ar/README.md",
         "checkpoints/wamdiff2-tiny-b32/README.md")


def test_rebuild_gives_the_committed_page_and_cards(tmp_path):
    """No runs/, no model: the scores store, the run records and the index are enough."""
    assert main(["--out", str(tmp_path), "--runs", str(tmp_path / "no-runs")]) == 0
    for page in PAGES:
        assert (tmp_path / page).read_bytes() == (REPO / page).read_bytes(), page


def test_shipping_writes_the_same_cards(tmp_path, monkeypatch):
    """The ladder's cards from training.ship, the paper rows' from training.ship_paper: the committed bytes."""
    runs = tmp_path / "runs"
    index = load_index()
    for entry in index.cards:
        (runs / entry.run).mkdir(parents=True)
        (runs / entry.run / "model.safetensors").write_bytes(b"weights")
    assert ship.main(["--runs", str(runs), "--results", str(REPO / "docs" / "results.json"),
                      "--out", str(tmp_path / "checkpoints")]) == 0
    registry = load_registry(REPO / "docs" / "runs" / "paper.yaml")
    paper_runs = tmp_path / "paper-runs"
    for entry in registry["shipped"]:  # records as the archive keeps them, weights made up
        for run in {*row_of(registry, entry["row"])["lineage"], row_of(registry, entry["row"])["run"],
                    *(row_of(registry, entry["row"]).get("teacher_lineage") or [])}:
            shutil.copytree(REPO / paper_card.ARCHIVE / run, paper_runs / run, dirs_exist_ok=True)
        (paper_runs / row_of(registry, entry["row"])["run"] / "model.safetensors").write_bytes(b"weights")
    monkeypatch.setattr(paper_card, "ARCHIVE", tmp_path / "archive")
    for entry in registry["shipped"]:
        assert ship_paper.main(["--row", entry["row"], "--name", entry["name"], "--runs", str(paper_runs),
                                "--registry", str(REPO / "docs" / "runs" / "paper.yaml"),
                                "--store", str(REPO / "docs" / "results_paper.json"), "--split", entry["split"],
                                "--out", str(tmp_path / "checkpoints")]) == 0
    shipped = [f"checkpoints/{c.name}/README.md" for c in index.cards]
    shipped += [f"checkpoints/{e['name']}/README.md" for e in registry["shipped"]]
    assert sorted(shipped) == sorted(PAGES[1:])
    for page in shipped:
        assert (tmp_path / page).read_bytes() == (REPO / page).read_bytes(), page


def test_index_is_checked_and_gives_lineages_and_chains(tmp_path, capsys):
    index = load_index()
    assert [s.name for s in index.lineage("tiny-b32-final")] == [
        "tiny-ar", "tiny-b4", "tiny-b8", "tiny-b16", "tiny-b32", "tiny-b32-distill",
        "small-ar", "small-b4", "small-b8", "small-b16", "small-b32", "tiny-b32-final"]
    assert index.lineage("not-a-run") == []
    assert index.expand(["v4-b32-w1", "v5"]) == ["v4-b32-w1", "v5-b32-x2-w2"]
    assert ladder_index.main(["--chain", "final"]) == 0
    assert capsys.readouterr().out == "tiny-b32-final distill-model distill_model.yaml tiny-b32-distill small-b32\n"
    assert ladder_index.main(["--final"]) == 0
    assert capsys.readouterr().out.split() == list(index.final)
    bad = tmp_path / "index.yaml"
    bad.write_text("runs: {a: {phase: p, train: ar, config: ar.yaml}}\n"
                   "rows: [{key: x, label: X, run: a, block_size: 1}]\ntargets: [y]\n")
    with pytest.raises(ValueError, match="'y' is not a row key"):
        load_index(bad)


def test_template_blocks_vanish_when_empty_and_names_must_exist():
    template = "# {{title}}\n\n{{rows}}\n{{extra}}\nend\n"
    assert fill(template, {"title": "T", "rows": ["a", "b"], "extra": []}) == "# T\n\na\nb\nend\n"
    with pytest.raises(KeyError):
        fill(template, {"title": "T", "rows": []})
    with pytest.raises(TypeError):
        fill("x {{rows}}", {"rows": ["a"]})
