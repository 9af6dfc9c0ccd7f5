"""A trained checkpoint carries the world rules of its training split (generation_config.json), so that the
closed loop and sim_node run it in the world it learned from."""

from __future__ import annotations

import json

from wamdiff2_ros.data.world.rules import checkpoint_world_rules as own_world_rules
from wamdiff2_ros.model.loader import init_model
from wamdiff2_ros.training.engine import save_final


def test_save_final_writes_the_split_world_rules(tmp_path):
    vla = init_model("tiny", seed=0)
    split = tmp_path / "synth-train"
    split.mkdir()
    (split / "synth_config.json").write_text(json.dumps({"command_horizon_s": 4.0, "lamp_visor_deg": 35.0}))
    save_final(vla, tmp_path / "new", split)
    assert own_world_rules(tmp_path / "new") == {"command_horizon_s": 4.0, "lamp_visor_deg": 35.0}
    # a split without the file (every split before the rules existed): the defaults, and no key
    save_final(vla, tmp_path / "old", tmp_path / "elsewhere")
    assert own_world_rules(tmp_path / "old") == {"command_horizon_s": 0.0, "lamp_visor_deg": 60.0}
    generation = tmp_path / "old" / "generation_config.json"
    assert not generation.is_file() or "world_rules" not in json.loads(generation.read_text())
