"""Block-mask forwards through transformers' Qwen3-VL: one full forward equals block-by-block KV-cache forwards.

Also checks that the custom 4D mask reaches attention (a block mask changes the logits
compared with the causal default, B=1 does not) with both CPU attention implementations.
"""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache

from wamdiff2_ros.model.forward import ar_forward, diffusion_forward
from wamdiff2_ros.model.inputs import build_inputs
from wamdiff2_ros.model.loader import init_model
from wamdiff2_ros.model.losses import add_block_noise, masked_diffusion_loss, pad_response
from wamdiff2_ros.model.masks import (
    continue_position_ids,
    decode_step_mask,
    inference_block_mask,
    prefill_block_mask,
    to_additive_4d,
)
from wamdiff2_ros.model.testing import toy_image

BLOCK = 4
TOL = 1e-5


@pytest.fixture(scope="module", params=["sdpa", "eager"])
def vla(request):
    torch.set_num_threads(1)
    return init_model("tiny", seed=0, block_size=BLOCK, attn_implementation=request.param)


@pytest.fixture(scope="module")
def sample(vla):
    inputs = build_inputs(vla, "Command: turn left. Speed 5.20 m/s. <image> Plan 8 waypoints.", [toy_image()],
                          answer="1.25,-0.50,3.00,0.25")
    response = pad_response(inputs["response_ids"], BLOCK, vla.end_token_id)[0]
    return inputs, response


def _vision(inputs):
    return {"pixel_values": inputs["pixel_values"], "image_grid_thw": inputs["image_grid_thw"]}


@torch.no_grad()
def test_full_block_forward_equals_prefill_plus_cached_blocks(vla, sample):
    inputs, response = sample
    m, p, r = vla.model, inputs["input_ids"].shape[1], response.shape[0]
    ids = torch.cat([inputs["input_ids"][0], response])[None]
    pos = torch.cat([inputs["position_ids"], continue_position_ids(inputs["position_ids"], r)], dim=-1)
    full = m(input_ids=ids, attention_mask=to_additive_4d(inference_block_mask(p, r, BLOCK)), position_ids=pos,
             **_vision(inputs), use_cache=False).logits
    causal = m(input_ids=ids, position_ids=pos, **_vision(inputs), use_cache=False).logits
    assert (full - causal).abs().max() > 1e-3  # the 4D block mask is used, not replaced by a causal one

    cache = DynamicCache(config=m.config)
    pieces = [m(input_ids=inputs["input_ids"], attention_mask=to_additive_4d(prefill_block_mask(p, BLOCK)),
                position_ids=inputs["position_ids"], **_vision(inputs), cache=cache, use_cache=True).logits]
    for k in range(r // BLOCK):
        sl = slice(p + k * BLOCK, p + (k + 1) * BLOCK)
        pieces.append(m(input_ids=ids[:, sl], attention_mask=to_additive_4d(decode_step_mask(cache.get_seq_length(), BLOCK)),
                        position_ids=pos[:, :, sl], cache=cache, use_cache=True).logits)
    assert (full - torch.cat(pieces, dim=1)).abs().max() < TOL


@torch.no_grad()
def test_chunked_prefill_equals_one_prefill_forward(vla):
    inputs = build_inputs(vla, "The traffic light is red and a pedestrian is crossing; slow down now.")
    m, p = vla.model, inputs["input_ids"].shape[1]
    one = m(input_ids=inputs["input_ids"], attention_mask=to_additive_4d(prefill_block_mask(p, BLOCK)),
            position_ids=inputs["position_ids"], use_cache=False).logits
    cache = DynamicCache(config=m.config)
    chunks = []
    for start in range(0, p, BLOCK):
        sl = slice(start, min(start + BLOCK, p))
        n = sl.stop - sl.start
        chunks.append(m(input_ids=inputs["input_ids"][:, sl], attention_mask=to_additive_4d(decode_step_mask(start, n)),
                        position_ids=inputs["position_ids"][:, :, sl], cache=cache, use_cache=True).logits)
    assert (one - torch.cat(chunks, dim=1)).abs().max() < TOL


@torch.no_grad()
def test_b1_block_mask_equals_causal(vla, sample):
    inputs, response = sample
    m, p, r = vla.model, inputs["input_ids"].shape[1], response.shape[0]
    ids = torch.cat([inputs["input_ids"][0], response])[None]
    pos = torch.cat([inputs["position_ids"], continue_position_ids(inputs["position_ids"], r)], dim=-1)
    block1 = m(input_ids=ids, attention_mask=to_additive_4d(inference_block_mask(p, r, 1)), position_ids=pos,
               **_vision(inputs), use_cache=False).logits
    causal = m(input_ids=ids, position_ids=pos, **_vision(inputs), use_cache=False).logits
    assert (block1 - causal).abs().max() < TOL


@torch.no_grad()
def test_training_noisy_logits_equal_cached_denoise_steps(vla, sample):
    inputs, response = sample
    m, p, r = vla.model, inputs["input_ids"].shape[1], response.shape[0]
    noisy = response.clone()
    noisy[::3] = vla.mask_token_id
    logits = diffusion_forward(vla, inputs, response[None], noisy[None])
    assert logits.shape == (1, r, vla.vocab_size)
    pos = torch.cat([inputs["position_ids"], continue_position_ids(inputs["position_ids"], r)], dim=-1)
    for k in range(r // BLOCK):
        cache = DynamicCache(config=m.config)
        ctx = torch.cat([inputs["input_ids"][0], response[: k * BLOCK]])[None]
        m(input_ids=ctx, attention_mask=to_additive_4d(inference_block_mask(p, k * BLOCK, BLOCK)),
          position_ids=pos[:, :, : p + k * BLOCK], **_vision(inputs), cache=cache, use_cache=True)
        sl = slice(k * BLOCK, (k + 1) * BLOCK)
        step = m(input_ids=noisy[sl][None], attention_mask=to_additive_4d(decode_step_mask(p + k * BLOCK, BLOCK)),
                 position_ids=pos[:, :, p + sl.start : p + sl.stop], cache=cache, use_cache=True).logits
        assert (step[0] - logits[0, sl]).abs().max() < TOL


@torch.no_grad()
def test_batched_forwards_equal_single_rows(vla, sample):
    inputs, response = sample
    other = build_inputs(vla, "Is it safe to change lanes?", answer="no")
    other_resp = pad_response(other["response_ids"], BLOCK, vla.end_token_id)[0]
    responses = pad_response([response, other_resp], BLOCK, vla.end_token_id)
    noisy, _, _ = add_block_noise(responses, BLOCK, vla.mask_token_id, generator=torch.Generator().manual_seed(0))
    both = diffusion_forward(vla, [inputs, other], responses, noisy)
    for b, prompt in enumerate([inputs, other]):
        single = diffusion_forward(vla, prompt, responses[b : b + 1], noisy[b : b + 1])
        assert (both[b] - single[0]).abs().max() < TOL
    ar_both, targets = ar_forward(vla, [inputs, other], [inputs["response_ids"][0], other["response_ids"][0]])
    ar_one, targets_one = ar_forward(vla, other, other["response_ids"])
    n = ar_one.shape[1]
    assert (ar_both[1, -n:] - ar_one[0]).abs().max() < TOL
    assert torch.equal(targets[1, -n:], targets_one[0])
    assert targets[1, : -n].eq(-100).all()


@torch.no_grad()
def test_ar_forward_matches_plain_causal_forward(vla, sample):
    inputs, _ = sample
    response = inputs["response_ids"]
    logits, targets = ar_forward(vla, inputs, response)
    r = response.shape[1]
    ids = torch.cat([inputs["input_ids"], response], dim=1)
    pos = torch.cat([inputs["position_ids"], continue_position_ids(inputs["position_ids"], r)], dim=-1)
    plain = vla.model(input_ids=ids, position_ids=pos, **_vision(inputs), use_cache=False).logits
    assert (plain[:, -(r + 1):] - logits).abs().max() < TOL
    assert targets[0, 0] == -100 and torch.equal(targets[0, 1:], response[0])


def test_diffusion_training_step_reduces_loss():
    torch.manual_seed(0)
    vla = init_model("tiny", seed=1, block_size=BLOCK)
    inputs = build_inputs(vla, "Command: turn left. <image>", [toy_image()], answer="1.25,-0.50")
    response = pad_response(inputs["response_ids"], BLOCK, vla.end_token_id)
    vla.model.train()
    opt = torch.optim.AdamW(vla.model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    noisy, t, masked = add_block_noise(response, BLOCK, vla.mask_token_id, generator=gen)
    masked[:, 0] = True
    noisy[masked] = vla.mask_token_id
    losses = []
    for _ in range(5):
        loss = masked_diffusion_loss(diffusion_forward(vla, inputs, response, noisy), response, masked, t)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert all(p.grad is not None for p in vla.model.model.visual.patch_embed.parameters())
