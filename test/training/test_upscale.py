"""Depth up-scaling (the Stage III teacher's start): twice the layers, the same function, training moves it."""

from __future__ import annotations

import torch

from wamdiff2_ros.model.inputs import build_inputs
from wamdiff2_ros.model.loader import init_model, load_model
from wamdiff2_ros.model.presets import get_preset
from wamdiff2_ros.model.testing import toy_image
from wamdiff2_ros.training.upscale import main, upscaled_state


def test_layer_map_copies_and_zeroes_the_residual_branches():
    state = {"model.language_model.layers.1.self_attn.o_proj.weight": torch.ones(2, 2),
             "model.language_model.layers.1.mlp.up_proj.weight": torch.ones(2, 2),
             "model.language_model.embed_tokens.weight": torch.ones(3, 2)}
    out = upscaled_state(state, 2)
    assert set(out) == {"model.language_model.layers.2.self_attn.o_proj.weight",
                        "model.language_model.layers.3.self_attn.o_proj.weight",
                        "model.language_model.layers.2.mlp.up_proj.weight",
                        "model.language_model.layers.3.mlp.up_proj.weight",
                        "model.language_model.embed_tokens.weight"}
    assert out["model.language_model.layers.2.self_attn.o_proj.weight"].sum() == 4
    assert out["model.language_model.layers.3.self_attn.o_proj.weight"].sum() == 0  # the copy adds nothing yet
    assert out["model.language_model.layers.3.mlp.up_proj.weight"].sum() == 4


def test_upscaled_model_computes_the_same_logits_with_images(tmp_path):
    torch.manual_seed(0)
    vla = init_model("tiny", seed=3)
    for p in vla.model.parameters():  # a "trained" model: no zero branches of its own
        p.data.add_(0.02 * torch.randn_like(p))
    src = vla.save(tmp_path / "src")
    assert main([str(src), str(tmp_path / "deep")]) == 0
    deep = load_model(tmp_path / "deep")
    assert deep.model.config.text_config.num_hidden_layers == 2 * get_preset("tiny").num_hidden_layers
    assert deep.model.config.text_config.num_hidden_layers == get_preset("tiny-deep").num_hidden_layers
    assert deep.num_parameters() > 1.5 * vla.num_parameters()
    inputs = build_inputs(vla, "Plan the next 4 seconds.", [toy_image(seed=1)], with_positions=True)
    with torch.no_grad():
        a = vla.model(**{k: v for k, v in inputs.items() if k != "mm_token_type_ids"}).logits
        b = deep.model(**{k: v for k, v in inputs.items() if k != "mm_token_type_ids"}).logits
    assert torch.allclose(a, b, atol=1e-5)
    # and the inserted layers do train: a step changes the logits
    opt = torch.optim.SGD(deep.model.parameters(), lr=0.1)
    deep.model.train()
    loss = deep.model(**{k: v for k, v in inputs.items() if k != "mm_token_type_ids"}).logits.logsumexp(-1).mean()
    loss.backward()
    assert deep.model.model.language_model.layers[1].self_attn.o_proj.weight.grad.abs().sum() > 0
    opt.step()
    assert main(["/no/such/checkpoint", str(tmp_path / "x")]) == 2
