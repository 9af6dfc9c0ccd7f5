"""The allow-list unpickler loads NAVSIM-style data and refuses anything that reaches for code."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

from wamdiff2_ros.data.pickle_safe import UnsafePickleError, safe_load_pickle, safe_loads_pickle


class _TouchFile:
    """Unpickling this would run ``os.system('touch <path>')``."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


class _EvalPayload:
    def __reduce__(self):
        return (eval, ("__import__('os').getcwd()",))


def test_malicious_reduce_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "pwned"
    log = tmp_path / "evil.pkl"
    # hide the payload inside an otherwise well-formed frame list
    frames = [{"token": "a", "timestamp": 1, "cams": {"CAM_F0": {"data_path": _TouchFile(str(marker))}}}]
    log.write_bytes(pickle.dumps(frames))
    # the payload is live: plain pickle runs it (on a second marker)
    live = tmp_path / "live"
    pickle.loads(pickle.dumps(_TouchFile(str(live))))
    assert live.exists()
    with pytest.raises(UnsafePickleError) as info:
        safe_load_pickle(log)
    assert not marker.exists()
    message = str(info.value)
    assert "system" in message and str(log) in message
    assert info.value.name == "system"


@pytest.mark.parametrize("payload", [_EvalPayload(), pickle.PickleError("x")])
def test_other_globals_are_refused(payload):
    with pytest.raises(UnsafePickleError):
        safe_loads_pickle(pickle.dumps(payload))


@pytest.mark.parametrize("protocol", range(0, pickle.HIGHEST_PROTOCOL + 1))
def test_numpy_and_builtins_round_trip(protocol):
    data = {
        "boxes": np.arange(14, dtype=np.float64).reshape(2, 7),
        "names": np.array(["vehicle", "pedestrian"]),
        "command": np.array([0, 1, 0, 0], dtype=np.int64),
        "scalar": np.float32(1.5),
        "int": np.int64(7),
        "lights": [(12, True), (13, False)],
        "set": {1, 2},
        "bytes": b"\x00\xff",
        "none": None,
    }
    out = safe_loads_pickle(pickle.dumps(data, protocol=protocol))
    assert np.array_equal(out["boxes"], data["boxes"]) and out["boxes"].dtype == np.float64
    assert out["names"].tolist() == ["vehicle", "pedestrian"]
    assert out["scalar"] == np.float32(1.5) and out["int"] == 7
    assert out["lights"] == [(12, True), (13, False)] and out["set"] == {1, 2} and out["bytes"] == b"\x00\xff"


def test_corrupt_pickle_names_the_file(tmp_path):
    path = tmp_path / "broken.pkl"
    path.write_bytes(pickle.dumps([1, 2, 3])[:-3])
    with pytest.raises(pickle.UnpicklingError, match="broken.pkl"):
        safe_load_pickle(path)
