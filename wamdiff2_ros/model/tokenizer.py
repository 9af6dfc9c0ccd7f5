"""Tokenizer for the tiny/small presets: a byte-level BPE trained on driving text and numbers.

The tokenizer keeps Qwen's chat and vision special tokens (``<|im_start|>``, ``<|im_end|>``,
``<|vision_start|>``, ...) plus the diffusion mask token ``<|mask|>``, so the code paths
that serve the real Qwen3-VL tokenizer serve this one unchanged. Digits are split one by
one before BPE (as Qwen does), so waypoints like ``-12.34`` tokenize into predictable
pieces. The trained file ships as ``assets/tokenizer.json``; :func:`train_tokenizer`
regenerates it deterministically (``python -m wamdiff2_ros.model.tokenizer OUT.json``).
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Iterator
from pathlib import Path

ASSET_TOKENIZER = Path(__file__).with_name("assets") / "tokenizer.json"

# Special tokens, in id order: the trainer inserts them before the byte alphabet and the merges,
# so they get the ids 0..7 (<|endoftext|> 0, <|im_start|> 1, <|im_end|> 2, ..., <|mask|> 7) and
# keep them across retraining. The real Qwen3-VL vocabulary has other ids (<|im_end|> 151645,
# WAM-Diff2's mask 151671): the loader reads the ids from the tokenizer or the checkpoint
# config, never from these positions.
ENDOFTEXT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
VISION_START = "<|vision_start|>"
VISION_END = "<|vision_end|>"
IMAGE_PAD = "<|image_pad|>"
VIDEO_PAD = "<|video_pad|>"
MASK = "<|mask|>"
SPECIAL_TOKENS: tuple[str, ...] = (ENDOFTEXT, IM_START, IM_END, VISION_START, VISION_END, IMAGE_PAD, VIDEO_PAD, MASK)

DEFAULT_VOCAB_SIZE = 2048

# Qwen3-VL's chat template, reduced to what the project uses (text and images, no tools).
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['content'] is string -%}{{ message['content'] }}"
    "{%- else -%}{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'image' or 'image' in item -%}<|vision_start|><|image_pad|><|vision_end|>"
    "{%- elif item['type'] == 'video' or 'video' in item -%}<|vision_start|><|video_pad|><|vision_end|>"
    "{%- elif item['type'] == 'text' -%}{{ item['text'] }}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{ '<|im_end|>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"
)

_COMMANDS = ("left", "straight", "right", "unknown")
_LABELS = ("vehicle", "pedestrian", "bicycle", "traffic_cone", "barrier", "czone_sign", "generic_object")
_CAMERAS = ("CAM_F0", "CAM_L0", "CAM_L1", "CAM_L2", "CAM_R0", "CAM_R1", "CAM_R2", "CAM_B0")
_VIEWS = ("front", "front-left", "left", "rear-left", "front-right", "right", "rear-right", "back")
_WORDS = (
    "the ego vehicle is driving on a straight road with light traffic ahead",
    "a pedestrian is crossing at the intersection so the car should yield and slow down",
    "the traffic light is red and the vehicle ahead is stopped in the same lane",
    "the traffic light turned green so the ego vehicle can proceed through the junction",
    "there is a parked truck on the right side of the road",
    "a cyclist is riding in the bike lane to the left of the ego vehicle",
    "the road curves to the left and the speed limit is fifty kilometres per hour",
    "construction cones block the right lane; merge into the left lane carefully",
    "it is raining and the road is wet, keep a larger distance to the car in front",
    "at night the visibility is low; headlights of oncoming vehicles are visible",
    "the ego vehicle should keep its lane and maintain a constant speed",
    "a bus is pulling out from the stop ahead, prepare to brake",
    "what are the important objects in the scene and why",
    "describe the current driving scene and the intention of the ego vehicle",
    "predict the future trajectory of the ego vehicle",
    "detect the objects around the ego vehicle and give their 3D boxes",
    "you are an autonomous driving agent. you have access to the front camera image",
    "the driving command is to turn left at the next intersection",
    "your task is to plan a safe trajectory for the next 4 seconds with 8 waypoints",
    "the current velocity, acceleration and high level command are given below",
    "waypoints are (x, y) in metres in the ego frame, x forward and y to the left",
    "answer yes or no. is it safe to change lanes now? no, a car is in the blind spot",
    "the ego vehicle is approaching an intersection and the signal is yellow, so it stops at the stop line",
    "a vehicle in the oncoming lane is turning across our path; wait until it has passed",
    "the lead vehicle is braking; the ego vehicle decelerates to keep a safe gap",
    "the crosswalk ahead is empty and the light is green, continue at the current speed",
    "there are barriers and traffic cones of a construction zone on the shoulder",
    "how many vehicles are visible? three vehicles and one pedestrian are visible",
    "why does the ego vehicle stop? because the traffic signal is red",
    "the ego vehicle accelerates after the light turns green and follows its lane",
    "Instruction: Using the motion cues in the image (how fast other road users move relative to the ego "
    "vehicle, how close the next intersection is) together with the telemetry above, predict the ego "
    "vehicle's driving for the next 4 seconds as 8 new waypoints.",
    "Instruction: Detect the objects around the ego vehicle in the images. Answer one object per item, "
    "items separated by ';', each written as label(x,y,z,length,width,height,yaw) with the box centre and "
    "size in metres in the ego frame (x forward, y left, z up) and the yaw in radians, optionally followed "
    "by the camera and its image box [x1,y1,x2,y2] on a 0-1000 scale. Answer none if there is no object.",
)


def _number(rng: random.Random, lo: float, hi: float, decimals: int = 2) -> str:
    return f"{rng.uniform(lo, hi):.{decimals}f}"


def driving_corpus(num_lines: int = 12000, seed: int = 0) -> Iterator[str]:
    """Yield synthetic driving text: instructions, rationales, numbers, waypoints and boxes."""
    rng = random.Random(seed)
    for i in range(num_lines):
        kind = i % 6
        if kind == 0:
            yield rng.choice(_WORDS).capitalize() + "."
        elif kind == 1:
            view = rng.choice(_VIEWS)
            camera = rng.choice(_CAMERAS)
            preamble = (
                f"Here is a {view}-view image from a driving vehicle: <image>"
                if rng.random() < 0.6
                else f"Here are images from 3 cameras of a driving vehicle:\n{view} view ({camera}): <image>"
            )
            yield (
                f"{preamble}\nThe navigation information is: {rng.choice(_COMMANDS)}\n"
                "The current position is (0.00,0.00)\n"
                f"The current velocity is: ({_number(rng, 0, 30)},{_number(rng, -1, 1)}) and current accelerate is: "
                f"({_number(rng, -4, 3)},{_number(rng, -2, 2)})"
            )
        elif kind == 2:
            speed = rng.uniform(0, 15)
            points = []
            x = y = 0.0
            for _ in range(8):
                x += speed * 0.5 + rng.uniform(-0.3, 0.3)
                y += rng.uniform(-0.4, 0.4)
                points.append(f"{x:.2f},{y:.2f}")
            yield ",".join(points)
        elif kind == 3:
            boxes = []
            for _ in range(rng.randint(1, 4)):
                box = (
                    f"{rng.choice(_LABELS)}({_number(rng, -50, 50)},{_number(rng, -50, 50)},{_number(rng, -2, 3)},"
                    f"{_number(rng, 0.3, 12)},{_number(rng, 0.3, 4)},{_number(rng, 0.5, 4)},{_number(rng, -3.14, 3.14)})"
                )
                if rng.random() < 0.4:
                    box += f" {rng.choice(_CAMERAS)}[{rng.randint(0, 999)},{rng.randint(0, 999)},{rng.randint(0, 999)},{rng.randint(0, 999)}]"
                boxes.append(box)
            yield ";".join(boxes) if rng.random() < 0.9 else "none"
        elif kind == 4:
            yield " ".join(str(rng.randint(0, 10 ** rng.randint(1, 5))) for _ in range(rng.randint(3, 12)))
        else:
            yield f"{IM_START}user\n{rng.choice(_WORDS)}{IM_END}\n{IM_START}assistant\n{rng.choice(_WORDS)}{IM_END}"


def train_tokenizer(
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    *,
    seed: int = 0,
    num_lines: int = 12000,
    special_tokens: tuple[str, ...] = SPECIAL_TOKENS,
):
    """Train the byte-level BPE on :func:`driving_corpus`; returns a ``tokenizers.Tokenizer``.

    The special tokens take ids 0..N-1 in the given order.
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    if vocab_size < 256 + len(special_tokens) + 16:
        raise ValueError(f"vocab_size={vocab_size} is too small for a byte-level BPE (need at least 300)")
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"\p{N}"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(driving_corpus(num_lines, seed), trainer=trainer)
    return tokenizer


def wrap_tokenizer(tokenizer_file: str | Path = ASSET_TOKENIZER):
    """Load a trained ``tokenizer.json`` as a transformers fast tokenizer with the chat template."""
    from transformers import PreTrainedTokenizerFast

    path = Path(tokenizer_file)
    if not path.is_file():
        raise FileNotFoundError(f"tokenizer file not found: {path} (regenerate it with `python -m {__name__} {path}`)")
    fast = PreTrainedTokenizerFast(
        tokenizer_file=str(path),
        bos_token=None,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        unk_token=None,
        additional_special_tokens=[IM_START, VISION_START, VISION_END, IMAGE_PAD, VIDEO_PAD, MASK],
        model_max_length=32768,
        padding_side="right",
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the tiny/small presets' BPE tokenizer.")
    parser.add_argument("out", nargs="?", default=str(ASSET_TOKENIZER), help="where to write tokenizer.json")
    parser.add_argument("--vocab-size", type=int, default=DEFAULT_VOCAB_SIZE)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    tokenizer = train_tokenizer(args.vocab_size, seed=args.seed)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    tokenizer.save(args.out)
    print(f"wrote {args.out} ({tokenizer.get_vocab_size()} tokens)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
