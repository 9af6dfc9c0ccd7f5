"""Commit records of the reference decoder: every decoded slot once, the rule's order, no change to the tokens."""

from __future__ import annotations

from wamdiff2_ros.decoding.commits import Commit, format_steps, summarize
from wamdiff2_ros.decoding.config import DecodeConfig
from wamdiff2_ros.decoding.reference import ReferenceDecoder


def test_commits_cover_every_slot_once_and_follow_the_rule(vla, make_inputs):
    inputs = make_inputs([11, 6], seed=2)
    config = DecodeConfig(block_size=8, confidence_threshold=0.3, max_new_tokens=24)
    plain = ReferenceDecoder(vla).generate(inputs, config)
    commits: list[Commit] = []
    recorded = ReferenceDecoder(vla).generate(inputs, config, commits=commits)
    assert recorded.tokens == plain.tokens and recorded.confidences == plain.confidences
    for row in range(2):
        mine = [c for c in commits if c.row == row]
        blocks = {c.block for c in mine}
        positions = sorted(c.position for c in mine)
        assert positions == list(range(8 * len(blocks)))  # each slot of each decoded block exactly once
        for c in mine:
            assert c.sure == (c.confidence >= 0.3)
            assert 1 <= c.step <= 8 and c.position // 8 == c.block
        for block in blocks:  # a step commits either all its sure slots or one unsure slot (or the cap fill)
            for step in {c.step for c in mine if c.block == block}:
                these = [c for c in mine if c.block == block and c.step == step]
                assert all(c.sure for c in these) or len(these) == 1 or step == 8
        kept = recorded.tokens[row]
        by_position = {c.position: c.token for c in mine}
        assert [by_position[i] for i in range(len(kept))] == kept


def test_summary_and_text():
    commits = [Commit(0, 0, 1, 0, 5, 0.95, True), Commit(0, 0, 1, 2, 6, 0.97, True), Commit(0, 0, 2, 1, 7, 0.4, False),
               Commit(0, 1, 1, 3, 8, 0.2, False), Commit(1, 0, 1, 0, 9, 0.99, True)]
    s = summarize(commits)
    assert s["tokens"] == 4 and s["steps"] == 3 and s["steps_per_block"] == [2, 1]
    assert s["sure_share"] == 0.5 and abs(s["mean_confidence_unsure"] - 0.3) < 1e-9
    text = format_steps(commits, lambda t: f"t{t}")
    assert text.splitlines() == ["block 0 step  1: 0:'t5'@0.95 2:'t6'@0.97", "block 0 step  2: 1:'t7'@0.40?",
                                 "block 1 step  1: 3:'t8'@0.20?"]
