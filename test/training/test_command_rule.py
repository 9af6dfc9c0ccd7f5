"""A trained checkpoint carries the driving-command rule of its training split (generation_config.json), so that
the closed loop and sim_node feed it the commands it learned from."""

from __future__ import annotations

import json

from wamdiff2_ros.model.checkpoints import own_command_horizon
from wamdiff2_ros.model.loader import init_model
from wamdiff2_ros.training.engine import save_final


def test_save_final_writes_the_split_command_rule(tmp_path):
    vla = init_model("tiny", seed=0)
    split = tmp_path / "synth-train"
    split.mkdir()
    (split / "synth_config.json").write_text(json.dumps({"command_horizon_s": 4.0}))
    save_final(vla, tmp_path / "new", split)
    assert own_command_horizon(tmp_path / "new") == 4.0
    # a split without the file (every split before the rule existed): the 20 m rule, and no key
    save_final(vla, tmp_path / "old", tmp_path / "elsewhere")
    assert own_command_horizon(tmp_path / "old") == 0.0
    generation = tmp_path / "old" / "generation_config.json"
    assert not generation.is_file() or "command_horizon_s" not in json.loads(generation.read_text())
