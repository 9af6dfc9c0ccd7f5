"""Objectives against hand computations: masked diffusion, AR, JSD; block noising; response padding."""

from __future__ import annotations

import math

import pytest
import torch

from wamdiff2_ros.model.losses import (
    add_block_noise,
    ar_loss,
    certainty_loss,
    jsd_loss,
    masked_diffusion_loss,
    pad_response,
    pad_responses,
    sample_block_times,
)


def _log_softmax(row: list[float]) -> list[float]:
    z = math.log(sum(math.exp(v) for v in row))
    return [v - z for v in row]


def test_pad_response_cases():
    end = 9
    assert pad_response(torch.tensor([1, 2, 3]), 4, end).tolist() == [1, 2, 3, 9]
    assert pad_response(torch.tensor([1, 2, 3, 4]), 4, end).tolist() == [1, 2, 3, 4]
    assert pad_response(torch.tensor([1, 2, 3]), 1, end).tolist() == [1, 2, 3]
    assert pad_response(torch.tensor([[1, 2, 3]]), 2, end).tolist() == [[1, 2, 3, 9]]
    assert pad_response([torch.tensor([1]), torch.tensor([1, 2, 3, 4, 5])], 2, end).tolist() == [
        [1, 9, 9, 9, 9, 9],
        [1, 2, 3, 4, 5, 9],
    ]
    assert pad_response(torch.tensor([[1, 2], [3, 4]]), 3, end).tolist() == [[1, 2, 9], [3, 4, 9]]
    assert pad_response(torch.tensor([], dtype=torch.long), 2, end).tolist() == [9, 9]
    with pytest.raises(ValueError, match="block_size"):
        pad_response(torch.tensor([1]), 0, end)


def test_masked_diffusion_loss_hand_case():
    # B=1, R=2, V=3; position 0 masked with t=0.5, position 1 unmasked.
    logits = torch.tensor([[[1.0, 2.0, 0.5], [0.0, 0.0, 3.0]]])
    targets = torch.tensor([[1, 0]])
    masked = torch.tensor([[True, False]])
    t = torch.tensor([[0.5, 0.5]])
    ce0 = -_log_softmax([1.0, 2.0, 0.5])[1]
    expected = (ce0 / 0.5) / 2  # sum over masked / R
    assert masked_diffusion_loss(logits, targets, masked, t).item() == pytest.approx(expected, rel=1e-6)


def test_masked_diffusion_loss_macro_average_over_rows():
    logits = torch.tensor([[[0.0, 1.0], [2.0, 0.0]], [[1.0, 1.0], [0.0, 0.0]]])
    targets = torch.tensor([[1, 1], [0, 1]])
    masked = torch.tensor([[True, True], [False, True]])
    t = torch.tensor([[0.25, 1.0], [1.0, 0.5]])
    row0 = (-_log_softmax([0.0, 1.0])[1] / 0.25 + -_log_softmax([2.0, 0.0])[1] / 1.0) / 2
    row1 = (-_log_softmax([0.0, 0.0])[1] / 0.5) / 2
    got = masked_diffusion_loss(logits, targets, masked, t)
    assert got.item() == pytest.approx((row0 + row1) / 2, rel=1e-6)
    # nothing masked -> zero loss, gradients still flow
    lg = logits.clone().requires_grad_(True)
    zero = masked_diffusion_loss(lg, targets, torch.zeros_like(masked), t)
    zero.backward()
    assert zero.item() == 0.0 and lg.grad is not None


def test_masked_diffusion_loss_no_shift():
    """The logit at j is scored against target j (not j+1)."""
    v = 5
    targets = torch.tensor([[3, 1, 4]])
    logits = torch.full((1, 3, v), -20.0)
    logits[0, torch.arange(3), targets[0]] = 20.0
    loss = masked_diffusion_loss(logits, targets, torch.ones(1, 3, dtype=torch.bool), torch.ones(1, 3))
    assert loss.item() < 1e-6


def test_ar_loss_hand_case():
    logits = torch.tensor([[[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.0], [9.0, 9.0, 9.0]]])
    targets = torch.tensor([[-100, 2, 1, -100]])
    # logits[0] predicts targets[1]=2, logits[1] predicts targets[2]=1, logits[2] -> ignored
    expected = (-_log_softmax([2.0, 0.0, 0.0])[2] - _log_softmax([0.0, 1.0, 0.0])[1]) / 2
    assert ar_loss(logits, targets).item() == pytest.approx(expected, rel=1e-6)
    assert ar_loss(logits, torch.full((1, 4), -100)).item() == 0.0


def test_jsd_loss_hand_case():
    s = torch.tensor([[[0.0, math.log(3.0)]]])  # p_s = (0.25, 0.75)
    t = torch.tensor([[[math.log(3.0), 0.0]]])  # p_t = (0.75, 0.25)
    m = [0.5, 0.5]
    kl_t = 0.75 * math.log(0.75 / m[0]) + 0.25 * math.log(0.25 / m[1])
    kl_s = 0.25 * math.log(0.25 / m[0]) + 0.75 * math.log(0.75 / m[1])
    expected = 0.5 * kl_t + 0.5 * kl_s
    got = jsd_loss(s, t, torch.tensor([[True]]))
    assert got.item() == pytest.approx(expected, rel=1e-5)
    # beta weights the mixture and the two KL terms
    beta = 0.2
    mix = [beta * 0.75 + 0.8 * 0.25, beta * 0.25 + 0.8 * 0.75]
    kl_t = 0.75 * math.log(0.75 / mix[0]) + 0.25 * math.log(0.25 / mix[1])
    kl_s = 0.25 * math.log(0.25 / mix[0]) + 0.75 * math.log(0.75 / mix[1])
    assert jsd_loss(s, t, torch.tensor([[True]]), beta=beta).item() == pytest.approx(beta * kl_t + 0.8 * kl_s, rel=1e-5)


def test_jsd_loss_properties():
    g = torch.Generator().manual_seed(0)
    s = torch.randn(2, 4, 7, generator=g, requires_grad=True)
    t = torch.randn(2, 4, 7, generator=g, requires_grad=True)
    masked = torch.tensor([[True, False, True, True], [False, False, True, False]])
    loss = jsd_loss(s, t, masked)
    assert 0.0 < loss.item() <= math.log(2.0)
    assert loss.item() == pytest.approx(jsd_loss(t.detach(), s.detach(), masked).item(), rel=1e-5)  # symmetric at 0.5
    assert jsd_loss(s, s.detach(), masked).item() == pytest.approx(0.0, abs=1e-6)
    assert jsd_loss(s, t, torch.zeros_like(masked)).item() == 0.0
    loss.backward()
    assert s.grad is not None and s.grad.abs().sum() > 0
    assert t.grad is None  # teacher is detached
    with pytest.raises(ValueError, match="share the tokenizer"):
        jsd_loss(s, t[..., :5], masked)
    with pytest.raises(ValueError, match="beta"):
        jsd_loss(s, t, masked, beta=1.5)


def test_add_block_noise_structure():
    mask_id = 99
    response = torch.arange(1, 33).reshape(2, 16)
    gen = torch.Generator().manual_seed(0)
    noisy, t, masked = add_block_noise(response, 4, mask_id, generator=gen)
    assert noisy.shape == t.shape == masked.shape == response.shape
    assert torch.equal(noisy[masked], torch.full((int(masked.sum()),), mask_id))
    assert torch.equal(noisy[~masked], response[~masked])
    blocks = t.reshape(2, 4, 4)
    assert torch.equal(blocks, blocks[..., :1].expand_as(blocks))  # one t per block
    assert (t >= 1e-3 / 4).all() and (t <= 1.0).all()
    again = add_block_noise(response, 4, mask_id, generator=torch.Generator().manual_seed(0))
    assert all(torch.equal(a, b) for a, b in zip((noisy, t, masked), again, strict=True))
    one_d = add_block_noise(response[0], 4, mask_id, generator=torch.Generator().manual_seed(1))
    assert one_d[0].shape == (16,)
    with pytest.raises(ValueError, match="multiple of block_size"):
        add_block_noise(torch.arange(6), 4, mask_id)


def test_block_times_are_stratified_and_masking_rate_follows_t():
    gen = torch.Generator().manual_seed(0)
    t = sample_block_times(500, 4, generator=gen)
    strata = torch.sort(t, dim=1).values
    for k in range(4):  # exactly one block per stratum [k/4, (k+1)/4)
        # the reference clamps the uniform draw to [0.001, 1] before stratifying: t >= (k + 0.001) / 4
        assert ((strata[:, k] >= (k + 1e-3) / 4 - 1e-7) & (strata[:, k] <= (k + 1) / 4 + 1e-7)).all()
    response = torch.zeros(400, 64, dtype=torch.long)
    _, tt, masked = add_block_noise(response, 64, 1, generator=gen)  # one block per row
    rate = masked.float().mean(1)
    assert torch.corrcoef(torch.stack([rate, tt[:, 0]]))[0, 1] > 0.95
    assert abs(masked.float().mean().item() - tt.mean().item()) < 0.02


def test_certainty_loss_is_the_entropy_of_right_masked_predictions_only():
    right = [2.0, 0.0, 0.0]  # argmax 0
    wrong = [0.0, 3.0, 0.0]  # argmax 1
    logits = torch.tensor([[right, wrong, right]])
    targets = torch.tensor([[0, 0, 0]])
    masked = torch.tensor([[True, True, False]])

    def entropy(row):
        return -sum(math.exp(v) * v for v in _log_softmax(row))

    # only position 0 is masked and right; macro average divides by the row length (3)
    assert certainty_loss(logits, targets, masked).item() == pytest.approx(entropy(right) / 3, rel=1e-5)
    none_right = certainty_loss(logits.clone().requires_grad_(True), torch.tensor([[1, 2, 2]]), masked)
    assert none_right.item() == 0.0 and none_right.requires_grad
    sharp = torch.tensor([[[9.0, 0.0, 0.0], wrong, right]])
    assert certainty_loss(sharp, targets, masked) < certainty_loss(logits, targets, masked)
    with pytest.raises(ValueError, match="masked"):
        certainty_loss(logits, targets, masked[:, :2])


# A batch mixing a short QA answer with a long plan, B=4, end token E=9:
# QA "a b" + E -> 3 tokens -> its own R = 4; plan of 9 tokens + E -> 10 -> its own R = 12.
END = 9
QA = torch.tensor([5, 6, END])
PLAN = torch.tensor([1, 2, 3, 4, 1, 2, 3, 4, 1, END])


def test_pad_responses_pads_each_answer_to_its_own_blocks():
    clean, lengths = pad_responses([QA, PLAN], 4, END)
    assert lengths.tolist() == [4, 12]  # not the batch's longest (12) for the QA answer
    assert clean.tolist() == [
        [5, 6, END, END] + [END] * 8,  # own padding, then filler up to the longest row
        [1, 2, 3, 4, 1, 2, 3, 4, 1, END, END, END],
    ]
    assert pad_responses([torch.tensor([], dtype=torch.long)], 4, END)[1].tolist() == [4]  # at least one block
    with pytest.raises(ValueError, match="block_size"):
        pad_responses([QA], 0, END)


def test_per_sample_loss_normalisation_hand_computed_batch():
    """1/t-weighted CE summed over each sample's masked positions / ITS OWN padded length, then the mean over samples."""
    clean, lengths = pad_responses([QA, PLAN], 4, END)
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 12, 10, generator=g)
    masked = torch.zeros(2, 12, dtype=torch.bool)
    masked[0, [1, 3]] = True  # QA: a real token and its own end-token padding (trained on)
    masked[0, 6] = True  # filler beyond the QA's own length: never trained
    masked[1, [0, 9, 11]] = True
    t = torch.tensor([[0.5] * 4 + [1.0] * 8, [0.25] * 4 + [0.8] * 4 + [0.4] * 4])

    def ce(b, j):
        return -_log_softmax(logits[b, j].tolist())[int(clean[b, j])]

    qa = (ce(0, 1) / 0.5 + ce(0, 3) / 0.5) / 4
    plan = (ce(1, 0) / 0.25 + ce(1, 9) / 0.4 + ce(1, 11) / 0.4) / 12
    got = masked_diffusion_loss(logits, clean, masked, t, lengths)
    assert got.item() == pytest.approx((qa + plan) / 2, rel=1e-6)
    # the old batch padding would have divided the QA row by 12 and trained the filler
    old = masked_diffusion_loss(logits, clean, masked, t)
    assert old.item() == pytest.approx(((qa * 4 + ce(0, 6) / 1.0) / 12 + plan) / 2, rel=1e-6)
    # the JSD and the certainty term use the same per-sample normalisation
    teacher = torch.randn(2, 12, 10, generator=g)
    per_row = [jsd_loss(logits[b : b + 1, : lengths[b]], teacher[b : b + 1, : lengths[b]], masked[b : b + 1, : lengths[b]])
               for b in range(2)]
    assert jsd_loss(logits, teacher, masked, lengths=lengths).item() == pytest.approx(sum(per_row).item() / 2, rel=1e-6)
    with pytest.raises(ValueError, match="lengths"):
        masked_diffusion_loss(logits, clean, masked, t, torch.tensor([4, 13]))


def test_block_noise_follows_each_samples_own_blocks():
    clean, lengths = pad_responses([QA, PLAN], 4, END)
    gen = torch.Generator().manual_seed(1)
    ts = []
    for _ in range(300):
        noisy, t, masked = add_block_noise(clean, 4, 99, generator=gen, lengths=lengths)
        assert not masked[0, 4:].any() and (t[0, 4:] == 1.0).all() and torch.equal(noisy[0, 4:], clean[0, 4:])
        assert torch.equal(noisy[masked], torch.full((int(masked.sum()),), 99))
        ts.append(t[1, ::4])
    plan_t = torch.sort(torch.stack(ts), dim=1).values  # the plan's 3 blocks: one t per third of (0, 1]
    for k in range(3):
        assert ((plan_t[:, k] >= (k + 1e-3) / 3 - 1e-7) & (plan_t[:, k] <= (k + 1) / 3 + 1e-7)).all()
    with pytest.raises(ValueError, match="multiples of block_size"):
        add_block_noise(clean, 4, 99, lengths=torch.tensor([3, 12]))
