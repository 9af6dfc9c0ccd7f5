"""Reports: Markdown table per block size and the plots it links."""

import numpy as np

from wamdiff2_ros.evaluation.report import write_report
from wamdiff2_ros.evaluation.scene import AgentBoxes, SceneGroundTruth
from wamdiff2_ros.evaluation.scoring import aggregate, score_scenes


def test_report_per_block_size(tmp_path):
    t = np.arange(1, 9) * 0.5
    gt = np.column_stack([5 * t, np.zeros(8), np.zeros(8)])
    agents = AgentBoxes.constant_velocity(np.array([[12.0, 4.0, 0, 4.5, 2.0, 1.5, 0.0]]), names=["vehicle"])
    scene = SceneGroundTruth("tok", gt, agents=agents)
    runs = {}
    for b, offset, speed in ((1, 0.2, 40.0), (8, 0.4, 150.0), (32, 0.5, 300.0)):
        summary = aggregate(score_scenes([(gt + [0, offset, 0], scene)], processes=1, progress=False))
        summary.update(block_size=b, decode_tokens_per_second=speed, fallback_rate=0.0)
        runs[f"B={b}"] = summary
    path = write_report(tmp_path, runs, samples=[("B=32", gt + [0, 0.5, 0], scene)], command="wamdiff2 eval open-loop")
    text = path.read_text()
    for name in ("B=1", "B=8", "B=32"):
        assert f"| {name} |" in text
    assert "| B=8 | 0.400 |" in text  # L2 avg column
    for plot in ("l2_horizon.png", "tokens_per_second.png", "bev_00.png"):
        assert (tmp_path / plot).stat().st_size > 1000 and plot in text
