"""CUDA-graph shapes with a shared prefix, tested as plain code on the CPU.

``FastEngine.static_shapes`` runs exactly the shapes graph mode captures (batch
rounded up to a power of two with finished filler rows, masks over the whole cache)
eagerly, and records each graph key. A stream of frames whose prompt, prefix and
suffix lengths and task subsets vary must map onto a fixed, small set of keys with no
cache reallocation (a reallocation drops every captured graph), and give the same
tokens as the eager engine. The FlashInfer page lists are checked as plain lists.
"""

from __future__ import annotations

import torch

from wamdiff2_ros.decoding.attention import request_pages
from wamdiff2_ros.decoding.config import DecodeConfig
from wamdiff2_ros.decoding.cuda_graphs import SLOT_ROUND, batch_bucket, graph_shape, slot_bucket
from wamdiff2_ros.decoding.fast import FastEngine
from wamdiff2_ros.decoding.kv_cache import StaticKVCache
from wamdiff2_ros.decoding.testing import frame_prompts


def test_graph_shape_buckets_rows_and_slots_and_keeps_a_bigger_cache():
    assert [batch_bucket(n) for n in (1, 2, 3, 4, 5)] == [1, 2, 4, 4, 8]
    assert [slot_bucket(n) for n in (1, SLOT_ROUND, SLOT_ROUND + 1)] == [SLOT_ROUND, SLOT_ROUND, 2 * SLOT_ROUND]
    assert graph_shape(3, 300) == (4, 512)
    assert graph_shape(1, 100, held=(4, 512)) == (4, 512)  # fits: keep it (no re-capture)
    assert graph_shape(2, 700, held=(4, 512)) == (4, 768)  # grows to cover both


def test_request_pages_left_padded_rows_are_one_contiguous_range():
    slots = 16
    qo, kv_indptr, pages = request_pages([(2, 6), (0, 6)], 6, [10], 4, slots)
    assert qo == [0, 4, 8]
    assert pages == list(range(2, 10)) + list(range(16, 26))
    assert kv_indptr == [0, 8, 18]


def test_request_pages_prefix_rows_skip_the_padding_before_the_response():
    slots = 20
    # row 0: prompt slots [0, 5), pads [5, 8); row 1: prompt [0, 8); responses from slot 8
    qo, kv_indptr, pages = request_pages([(0, 5), (0, 8)], 8, [8, 12], 4, slots)
    assert qo == [0, 4, 8, 12, 16]
    row0_clean, row0_step = list(range(0, 5)), list(range(0, 5)) + list(range(8, 12))
    row1_clean, row1_step = list(range(20, 28)), list(range(20, 28)) + list(range(28, 32))
    assert pages == row0_clean + row0_step + row1_clean + row1_step
    assert kv_indptr == [0, 5, 14, 22, 34]


def test_static_cache_serves_smaller_requests_and_copies_a_prefix():
    cache = StaticKVCache(2, 4, 32, 2, 8, torch.float32, torch.device("cpu"))
    assert cache.fits(1, 20, torch.float32, torch.device("cpu"), "dense")
    assert not cache.fits(8, 20, torch.float32, torch.device("cpu"), "dense")
    for layout in ("dense", "paged"):
        target = StaticKVCache(2, 3, 32, 2, 8, torch.float32, torch.device("cpu"), layout)
        source = StaticKVCache(2, 1, 6, 2, 8, torch.float32, torch.device("cpu"))
        source.k[1].normal_()
        source.v[1].normal_()
        target.load_prefix(source, 2, 6)
        k, v = target.dense(1, 3, 6)
        assert torch.equal(k[:2], source.k[1].expand(2, -1, -1, -1)) and torch.equal(v[1], source.v[1][0])
        assert not k[2].any()  # rows beyond the request untouched


def test_frames_with_varying_prefixes_reuse_the_same_graph_keys(vla):
    """Static (graph) shapes: same tokens as eager, a bounded key set, and no reallocation after warm-up."""
    config = DecodeConfig(block_size=8, confidence_threshold=0.5, max_new_tokens=16)
    frames = [  # (common prefix, suffixes, cameras, rows to decode together)
        (40, [9, 3, 12], 3, [None]),  # warm-up: the longest prompt, three rows
        (29, [5, 2], 3, [[0], [1]]),
        (16, [7, 4, 2], 1, [[0], [1, 2]]),
        (33, [3, 6, 5], 3, [[0], [1, 2]]),
        (21, [2, 8], 1, [None]),
    ]
    static, eager = FastEngine(vla), FastEngine(vla)
    static.static_shapes = True
    keys_after_warmup = allocations_after_warmup = None
    for index, (common, suffixes, cameras, groups) in enumerate(frames):
        prompts = frame_prompts(common, suffixes, cameras, seed=index)
        prefix_static = static.encode_prefix(prompts, config)
        prefix_eager = eager.encode_prefix(prompts, config)
        assert prefix_static.length == prefix_eager.length == common // 8 * 8
        for rows in groups:
            a = static.generate_from_prefix(prefix_static, rows, config)
            b = eager.generate_from_prefix(prefix_eager, rows, config)
            assert a.tokens == b.tokens and a.finished == b.finished
            assert a.confidences == b.confidences or max(
                abs(x - y) for x, y in zip(a.confidences, b.confidences, strict=True)) < 1e-5
        if index == 0:
            keys_after_warmup = set(static.graph_keys)
            allocations_after_warmup = static.cache_allocations
    assert static.cache_allocations == allocations_after_warmup == 1
    assert static.cache.rows == 4 and static.cache.slots % SLOT_ROUND == 0
    assert {key[1] for key in static.graph_keys} <= {1, 2, 4}  # batch buckets only
    assert {(key[0], key[2], key[3]) for key in static.graph_keys} <= {("step", 8, "sdpa"), ("fused", 8, "sdpa")}
    assert keys_after_warmup <= static.graph_keys and len(static.graph_keys) <= 6


def test_left_padded_batches_and_prefix_batches_share_graphs(vla, make_inputs):
    config = DecodeConfig(block_size=4, confidence_threshold=0.5, max_new_tokens=12)
    engine = FastEngine(vla)
    engine.static_shapes = True
    engine.generate(make_inputs([40, 7]), config)
    keys, allocations = set(engine.graph_keys), engine.cache_allocations
    prompts = frame_prompts(20, [4, 9], cameras=1, seed=5)
    engine.generate_from_prefix(engine.encode_prefix(prompts, config), None, config)
    assert engine.graph_keys == keys and engine.cache_allocations == allocations
