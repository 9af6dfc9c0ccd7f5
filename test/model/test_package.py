"""The model package stays light to import: no torch for the package itself or the codecs, never rclpy."""

from __future__ import annotations

import subprocess
import sys


def _imports(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return set(out.stdout.split())


def test_package_import_does_not_pull_torch():
    modules = _imports("import wamdiff2_ros.model")
    assert "torch" not in modules and "transformers" not in modules


def test_codecs_import_does_not_pull_torch():
    assert "torch" not in _imports("import wamdiff2_ros.model.codecs")


def test_lazy_reexports_resolve_and_model_room_never_imports_rclpy():
    modules = _imports(
        "import wamdiff2_ros.model as m; m.load_model; m.build_inputs; m.training_block_mask; "
        "m.masked_diffusion_loss; m.diffusion_forward; import wamdiff2_ros.model.commands"
    )
    assert "torch" in modules and "rclpy" not in modules
