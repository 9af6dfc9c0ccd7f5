"""The `wamdiff2` command: one entry point whose sub-commands live in their rooms.

Each sub-command is named by a target ``"package.module:name"``; the module provides
``name(args) -> int`` and, optionally, ``name_arguments(parser)``. Modules are
imported only for the command that runs, so ``wamdiff2 --help`` stays fast and never
imports torch or rclpy. Every target exists (test/foundation/test_cli.py resolves them
all): one that does not is a bug and fails loudly.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from wamdiff2_ros import __version__

# command -> (help, target) or (help, {subcommand: (help, target)})
COMMANDS: dict[str, tuple[str, str | dict[str, tuple[str, str]]]] = {
    "model": (
        "create and inspect model checkpoints",
        {
            "init": ("write a random-initialised preset checkpoint", "wamdiff2_ros.model.commands:init"),
            "info": ("print a checkpoint's parameters, block size, tokens", "wamdiff2_ros.model.commands:info"),
        },
    ),
    "bench": (
        "benchmarks that print a table and write JSON",
        {
            "decode": ("decode tokens/s per engine and block size", "wamdiff2_ros.bench.decode:decode"),
            "decode-profile": ("where a decode forward's time goes: matmul, attention, the rest",
                               "wamdiff2_ros.bench.decode_profile:decode_profile"),
            "synth": ("frames per second of the synthetic world", "wamdiff2_ros.bench.synth:synth"),
            "train-step": ("wall time of one training step per preset and objective",
                           "wamdiff2_ros.bench.train_step:train_step"),
            "sweep": ("planning L2 and QA against tokens/forward over confidence thresholds",
                      "wamdiff2_ros.bench.sweep:sweep"),
            "paired-speed": ("tokens/s of checkpoints timed interleaved on the same scenes, ratios with intervals",
                             "wamdiff2_ros.bench.paired_speed:paired_speed"),
            "trace": ("which tokens each denoise step commits on one held-out sample",
                      "wamdiff2_ros.bench.trace:trace"),
            "agent-tasks": ("per-frame DrivingAgent latency of the three tasks, with and without a shared prefix",
                            "wamdiff2_ros.bench.agent_tasks:agent_tasks"),
            "gpu-prefix-check": ("device check: shared-prefix agent tokens equal the reference's, no graph re-capture",
                                 "wamdiff2_ros.bench.gpu_prefix_check:gpu_prefix_check"),
        },
    ),
    "synth": ("write synthetic NAVSIM-format logs and camera images", "wamdiff2_ros.data.commands:synth"),
    "data": (
        "inspect and export NAVSIM-format logs",
        {
            "inspect": ("summarise logs: frames, scenes, cameras", "wamdiff2_ros.data.commands:inspect"),
            "export": ("write the reference's conversation JSON", "wamdiff2_ros.data.commands:export"),
        },
    ),
    "train": (
        "AR baseline and the three-stage hierarchical distillation",
        {
            "ar": ("stage 0: autoregressive generalist (B=1)", "wamdiff2_ros.training.commands:ar"),
            "adapt": ("stage I: progressive block-wise adaptation", "wamdiff2_ros.training.commands:adapt"),
            "distill-block": ("stage II: block-wise distillation", "wamdiff2_ros.training.commands:distill_block"),
            "distill-model": ("stage III: cross-scale model distillation", "wamdiff2_ros.training.commands:distill_model"),
            "relabel": ("teacher answers as sequence-level distillation targets", "wamdiff2_ros.training.relabel:relabel"),
        },
    ),
    "eval": (
        "evaluate a model on NAVSIM-format logs",
        {
            "open-loop": ("open-loop planning/QA/detection evaluation", "wamdiff2_ros.evaluation.commands:open_loop"),
            "closed-loop": ("closed-loop routes in the synthetic world: driving score, infractions, BEV plots",
                            "wamdiff2_ros.evaluation.commands:closed_loop"),
        },
    ),
    "bag": (
        "rosbag2 export and evaluation",
        {
            "export": ("write NAVSIM logs as a rosbag2 (MCAP or sqlite3)", "wamdiff2_ros.ros.bag_export:export"),
            "eval": ("score recorded Trajectory messages against logs", "wamdiff2_ros.evaluation.commands:bag_eval"),
        },
    ),
    "demo": ("run the nodes end to end and write a summary", "wamdiff2_ros.ros.demo:demo"),
}


def _resolve(target: str) -> tuple[Callable[[argparse.ArgumentParser], None] | None, Callable[..., int]]:
    """Import ``"package.module:name"``; returns (``name_arguments`` or None, ``name``)."""
    module_name, _, name = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, f"{name}_arguments", None), getattr(module, name)


def _top_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wamdiff2",
        description="WAM-Diff2 driving VLA: models, data, training, evaluation, ROS 2 demo.",
    )
    parser.add_argument("--version", action="version", version=f"wamdiff2_ros {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (help_text, spec) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, add_help=False)
        if isinstance(spec, dict):
            p.epilog = "sub-commands: " + ", ".join(spec)
    return parser


def _command_parser(path: list[str], help_text: str) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog="wamdiff2 " + " ".join(path), description=help_text)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    top = _top_parser()
    if not argv or argv[0] not in COMMANDS:
        top.parse_args(argv or ["--help"])  # prints help / errors and exits
        return 2
    name, rest = argv[0], argv[1:]
    help_text, spec = COMMANDS[name]
    path = [name]
    if isinstance(spec, dict):
        sub = _command_parser(path, help_text)
        choices = sub.add_subparsers(dest="sub", metavar="SUBCOMMAND", required=True)
        for sub_name, (sub_help, _) in spec.items():
            choices.add_parser(sub_name, help=sub_help, add_help=False)
        if not rest or rest[0] not in spec:
            sub.parse_args(rest or ["--help"])
            return 2
        path.append(rest[0])
        help_text, target = spec[rest[0]]
        rest = rest[1:]
    else:
        target = spec
    add_arguments, run = _resolve(target)
    parser = _command_parser(path, help_text)
    if add_arguments is not None:
        add_arguments(parser)
    args = parser.parse_args(rest)
    return int(run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
