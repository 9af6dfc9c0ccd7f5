"""The training engine shared by every stage: torchrun/DDP, AdamW + cosine schedule, accumulation, AMP, resume.

Run one process per device with ``torchrun --nproc_per_node N -m wamdiff2_ros.cli train
STAGE --config FILE``: the process group uses NCCL on GPUs and gloo on CPU; without
torchrun's environment the engine runs as a single process. Rank 0 writes:

- ``OUTPUT_DIR/`` the final model (``WamDiff2.save``: safetensors, tokenizer, processor),
  so the next stage can start from it with ``init: OUTPUT_DIR``;
- ``OUTPUT_DIR/checkpoint/`` the latest resumable state: the model (same format) plus
  ``trainer_state.pt`` (optimizer, scheduler, step, data position, noise RNG);
- ``OUTPUT_DIR/train_log.csv``, ``loss.png``, ``train_config.json``, ``train_summary.json``.

A run whose ``checkpoint/`` exists resumes from it (``resume: false`` starts over).
Distillation stages with ``on_policy`` replace the batch's answers by the student's own
block-decoded answers every ``rollout_every`` steps (:mod:`wamdiff2_ros.training.rollout`);
the log's ``on_policy`` column says which steps did.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from wamdiff2_ros.data.tokenized import TokenizedDataset
from wamdiff2_ros.evaluation.loss_curves import plot_loss
from wamdiff2_ros.evaluation.run_records import LOG_FILE, read_log
from wamdiff2_ros.model.loader import init_model, load_model
from wamdiff2_ros.training import objectives
from wamdiff2_ros.training.config import TrainConfig
from wamdiff2_ros.training.dataset import DataPosition, ShardedBatches, cache_dir_for, collate
from wamdiff2_ros.training.relabel import apply_targets, load_targets
from wamdiff2_ros.training.rollout import student_rollout

CHECKPOINT_DIR = "checkpoint"
STATE_FILE = "trainer_state.pt"


@dataclass
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = dataclasses.field(default_factory=lambda: torch.device("cpu"))
    initialised_here: bool = False

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


@dataclass
class TrainResult:
    """What a run did: final loss, steps, wall time, where the model went, per-step log rows."""

    output_dir: Path
    steps: int
    start_step: int
    wall_time_s: float
    final_loss: float
    history: list[dict[str, float]]
    vla: Any = None
    finished: bool = True


def setup_distributed(device: str = "auto") -> DistInfo:
    """Join torchrun's process group when its environment is set (NCCL on CUDA, gloo on CPU)."""
    import torch.distributed as dist

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    use_cuda = torch.cuda.is_available() if device == "auto" else device.startswith("cuda")
    if use_cuda and not torch.cuda.is_available():
        raise RuntimeError(f"device={device!r} but CUDA is not available")
    dev = torch.device("cuda", local % torch.cuda.device_count()) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(dev)
    info = DistInfo(rank, world, local, dev)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend="nccl" if use_cuda else "gloo")
        info.initialised_here = True
    elif dist.is_initialized():
        info.rank, info.world_size = dist.get_rank(), dist.get_world_size()
    return info


def _barrier(info: DistInfo) -> None:
    if info.distributed:
        import torch.distributed as dist

        dist.barrier()


def _mean_across(value: float, info: DistInfo) -> float:
    if not info.distributed:
        return value
    import torch.distributed as dist

    t = torch.tensor([value], dtype=torch.float64, device=info.device if info.device.type == "cuda" else "cpu")
    dist.all_reduce(t)
    return float(t.item()) / info.world_size


def lr_lambda(cfg: TrainConfig):
    """Linear warm-up then cosine decay to ``min_lr_ratio``."""

    def fn(step: int) -> float:
        if step < cfg.warmup_steps:
            return (step + 1) / cfg.warmup_steps
        progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
        return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    return fn


def load_student(cfg: TrainConfig, device: torch.device, init: str | None = None):
    """The model to train: ``init`` (a checkpoint dir) at ``cfg.block_size``, or a fresh preset.

    ``cfg.prompt_format``, when set, becomes the model's prompt format (saved with it);
    otherwise the checkpoint keeps its own.
    """
    path = init if init is not None else cfg.init
    if path:
        vla = load_model(path, device=device, block_size=cfg.block_size)
    else:
        vla = init_model(cfg.preset, seed=cfg.seed, device=device, block_size=cfg.block_size)
    if cfg.prompt_format:
        vla.prompt_format = cfg.prompt_format
    return vla


def load_teacher(cfg: TrainConfig, device: torch.device, student: Any = None):
    """The frozen distillation teacher at ``cfg.effective_teacher_block_size``; it must read the student's prompt format."""
    teacher = load_model(cfg.teacher, device=device, block_size=cfg.effective_teacher_block_size)
    expected = student.prompt_format if student is not None else (cfg.prompt_format or None)
    if expected is not None and teacher.prompt_format != expected:
        raise ValueError(f"teacher {cfg.teacher} was trained on prompt format {teacher.prompt_format!r} but the student "
                         f"reads {expected!r}; distil between models of one prompt format")
    teacher.model.eval()
    for p in teacher.model.parameters():
        p.requires_grad_(False)
    return teacher


def load_dataset(cfg: TrainConfig, vla: Any, info: DistInfo) -> TokenizedDataset:
    """Rank 0 builds (or reads) the tokenised cache; the other ranks wait, then read it."""
    cache = cache_dir_for(cfg)
    if info.is_main:
        dataset = TokenizedDataset.build(cfg.data, vla, cache, progress=cfg.progress)
    _barrier(info)
    if not info.is_main:
        dataset = TokenizedDataset.build(cfg.data, vla, cache, progress=False, build=False)
    if cfg.data.targets:
        replaced = apply_targets(dataset.rows, load_targets(cfg.data.targets), vla)
        if info.is_main:
            print(f"data.targets: {replaced} of {len(dataset)} answers are the teacher's ({cfg.data.targets})")
        if not replaced:
            raise ValueError(f"data.targets {cfg.data.targets} names none of this dataset's samples")
    return dataset


def compute_loss(cfg: TrainConfig, vla: Any, teacher: Any, batch: Any, generator: torch.Generator):
    if cfg.stage == "ar":
        return objectives.ar_objective(vla, batch)
    if cfg.stage == "adapt":
        return objectives.diffusion_objective(vla, batch, cfg.block_size, generator, cfg.certainty_weight)
    return objectives.distill_objective(
        vla, teacher, batch, cfg.block_size, cfg.effective_teacher_block_size, generator=generator,
        jsd_weight=cfg.jsd_weight, diffusion_weight=cfg.diffusion_weight, beta=cfg.jsd_beta,
    )


def on_policy_batch(cfg: TrainConfig, vla: Any, batch: Any) -> Any:
    """The batch with its answers replaced by the student's own block-decoded answers (the reference's rollout)."""
    prompts, _ = batch
    answers = student_rollout(vla, prompts, cfg.block_size, confidence_threshold=cfg.rollout_threshold,
                              max_new_tokens=cfg.rollout_max_tokens, engine=cfg.rollout_engine)
    return prompts, answers


def _autocast(cfg: TrainConfig, device: torch.device):
    if cfg.mixed_precision == "no":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if cfg.mixed_precision == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


def save_checkpoint(vla: Any, directory: Path, state: dict[str, Any] | None = None) -> Path:
    """The model via ``WamDiff2.save`` (+ ``trainer_state.pt`` when given); written to a temp dir, then renamed."""
    import shutil

    tmp = directory.with_name(directory.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    vla.save(tmp)
    if state is not None:
        torch.save(state, tmp / STATE_FILE)
    if directory.exists():
        old = directory.with_name(directory.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        directory.rename(old)
        tmp.rename(directory)
        shutil.rmtree(old)
    else:
        tmp.rename(directory)
    return directory


def save_final(vla: Any, output_dir: Path, logs_dir: str | Path | None = None, plan_style: str = "plain") -> None:
    """The final model at the top of ``output_dir`` (model, tokenizer, processor files only), with the
    world rules of its training split (``logs_dir``: the driving command's look-ahead, the lamps' visor) and a
    residual plan style it was trained on in its ``generation_config.json``."""
    from wamdiff2_ros.data.world.rules import split_world_rules, write_world_rules
    from wamdiff2_ros.model.checkpoints import write_plan_style

    vla.save(output_dir)
    if logs_dir:
        write_world_rules(output_dir, split_world_rules(logs_dir))
    write_plan_style(output_dir, plan_style)


def _write_csv(path: Path, rows: list[dict[str, float]]) -> None:
    if not rows:
        return
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)


def train(cfg: TrainConfig, *, resume: bool = True) -> TrainResult:
    """Run one stage as configured (under torchrun: one rank of it)."""
    from torch.nn.parallel import DistributedDataParallel

    cfg.validate()
    if cfg.num_threads:
        torch.set_num_threads(cfg.num_threads)
    info = setup_distributed(cfg.device)
    out = Path(cfg.output_dir)
    ckpt = out / CHECKPOINT_DIR
    resuming = resume and (ckpt / STATE_FILE).is_file()
    torch.manual_seed(cfg.seed)
    vla = load_student(cfg, info.device, init=str(ckpt) if resuming else None)
    teacher = load_teacher(cfg, info.device, vla) if cfg.distills else None
    dataset = load_dataset(cfg, vla, info)
    vla.model.train()
    if info.distributed:
        ddp = DistributedDataParallel(vla.model, device_ids=[info.device.index] if info.device.type == "cuda" else None)
        train_vla = dataclasses.replace(vla, model=ddp)
    else:
        ddp, train_vla = None, vla
    params = [p for p in vla.model.parameters() if p.requires_grad]
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr,
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda(cfg))
    scaler = torch.amp.GradScaler("cuda") if cfg.mixed_precision == "fp16" and info.device.type == "cuda" else None
    generator = torch.Generator().manual_seed(cfg.seed * 1000 + info.rank + 1)
    start_step, history, position = 0, [], DataPosition()
    if resuming:
        state = torch.load(ckpt / STATE_FILE, weights_only=True, map_location="cpu")
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start_step = int(state["step"])
        pos = state["data_position"][info.rank] if info.rank < len(state["data_position"]) else state["data_position"][0]
        position = DataPosition(int(pos[0]), int(pos[1]))
        gen_states = state["generator"]
        generator.set_state(gen_states[info.rank] if info.rank < len(gen_states) else gen_states[0])
        history = read_log(out / LOG_FILE)
        history = [r for r in history if r.get("step", 0) <= start_step]
    batches = ShardedBatches(len(dataset), cfg.batch_size, rank=info.rank, world_size=info.world_size,
                             seed=cfg.data.seed + cfg.seed, position=position)
    if info.is_main:
        out.mkdir(parents=True, exist_ok=True)
        (out / "train_config.json").write_text(json.dumps(cfg.to_dict(), indent=2) + "\n")
    bar = None
    if info.is_main and cfg.progress:
        from tqdm import tqdm

        bar = tqdm(total=cfg.steps, initial=start_step, desc=f"{cfg.stage} B={cfg.block_size}", unit="step")
    t0 = time.perf_counter()
    previous_wall = history[-1].get("wall_s", 0.0) if history else 0.0
    loss_value = float("nan")

    def state_dict(step: int) -> dict[str, Any]:
        positions = _gather_positions(batches.position, generator, info)
        return {
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "step": step,
            "data_position": positions[0],
            "generator": positions[1],
            "world_size": info.world_size,
        }

    end_step = min(cfg.steps, start_step + cfg.stop_after) if cfg.stop_after else cfg.steps
    for step in range(start_step, end_step):
        optimizer.zero_grad(set_to_none=True)
        total, metrics_sum = 0.0, {}
        on_policy = cfg.on_policy_step(step)
        for micro in range(cfg.grad_accum):
            rows = [dataset[i] for i in batches.next_batch()]
            batch = collate(rows)
            if on_policy:
                batch = on_policy_batch(cfg, vla, batch)
            sync = ddp is None or micro == cfg.grad_accum - 1
            context = contextlib.nullcontext() if sync else ddp.no_sync()
            with context:
                with _autocast(cfg, info.device):
                    loss, metrics = compute_loss(cfg, train_vla, teacher, batch, generator)
                if cfg.distills:
                    metrics = {**metrics, "on_policy": float(on_policy)}
                loss = loss / cfg.grad_accum
                if scaler is not None:
                    scaler.scale(loss).backward()
                else:
                    loss.backward()
            total += float(loss.detach())
            for k, v in metrics.items():
                metrics_sum[k] = metrics_sum.get(k, 0.0) + v / cfg.grad_accum
        if scaler is not None:
            scaler.unscale_(optimizer)
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm))
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        lr = scheduler.get_last_lr()[0]
        scheduler.step()
        loss_value = _mean_across(total, info)
        row = {"step": step + 1, "loss": loss_value, "lr": lr, "grad_norm": grad_norm,
               "wall_s": previous_wall + time.perf_counter() - t0}
        row.update({k: _mean_across(v, info) for k, v in metrics_sum.items()})
        history.append(row)
        if bar is not None:
            bar.update(1)
            if (step + 1) % max(1, cfg.log_every) == 0:
                bar.set_postfix(loss=f"{loss_value:.4f}")
        last = step + 1 == end_step
        if (cfg.save_every and (step + 1) % cfg.save_every == 0) or last:
            state = state_dict(step + 1)
            if info.is_main:
                save_checkpoint(vla, ckpt, state)
                _write_csv(out / LOG_FILE, history)
            _barrier(info)
    if bar is not None:
        bar.close()
    wall = previous_wall + time.perf_counter() - t0
    finished = end_step == cfg.steps
    if info.is_main and finished:
        save_final(vla, out, cfg.data.logs_dir, cfg.data.plan_style)
        _write_csv(out / LOG_FILE, history)
        try:
            plot_loss(history, out / "loss.png", title=f"{cfg.stage} B={cfg.block_size} ({cfg.preset if not cfg.init else Path(cfg.init).name})")
        except Exception as exc:  # a plot must never lose a trained model
            print(f"warning: loss plot not written: {exc}")
    if info.is_main:
        summary = {"stage": cfg.stage, "block_size": cfg.block_size, "steps": cfg.steps, "start_step": start_step,
                   "steps_done": end_step, "batch_size": cfg.batch_size, "grad_accum": cfg.grad_accum,
                   "world_size": info.world_size, "wall_time_s": wall, "final_loss": loss_value,
                   "num_samples": len(dataset), "tasks": dataset.tasks(), "parameters": vla.num_parameters(),
                   "finished": finished}
        (out / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    _barrier(info)
    if info.initialised_here:
        import torch.distributed as dist

        dist.destroy_process_group()
    vla.model.eval()
    return TrainResult(out, end_step, start_step, wall, loss_value, history, vla, finished)


def evaluation_loss(cfg: TrainConfig, vla: Any, rows: list[dict[str, Any]], teacher: Any = None,
                    seed: int = 1234) -> float:
    """The stage's loss on ``rows`` with a fixed noise seed (comparable before and after training)."""
    was_training = vla.model.training
    vla.model.eval()
    try:
        with torch.no_grad():
            loss, _ = compute_loss(cfg, vla, teacher, collate(rows), torch.Generator().manual_seed(seed))
    finally:
        vla.model.train(was_training)
    return float(loss)


def _gather_positions(position: DataPosition, generator: torch.Generator,
                      info: DistInfo) -> tuple[list[list[int]], list[torch.Tensor]]:
    """Every rank's data position and noise RNG state (rank order), for the checkpoint."""
    mine = ([position.epoch, position.batch], generator.get_state())
    if not info.distributed:
        return [mine[0]], [mine[1]]
    import torch.distributed as dist

    gathered: list[Any] = [None] * info.world_size
    dist.all_gather_object(gathered, mine)
    return [g[0] for g in gathered], [g[1] for g in gathered]
