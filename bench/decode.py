"""Decode benchmark: same as `wamdiff2 bench decode` (see wamdiff2_ros/decoding/bench.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wamdiff2_ros.decoding.bench import decode, decode_arguments  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/decode.py", description="decode tokens/s per engine and block size")
    decode_arguments(parser)
    return decode(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
