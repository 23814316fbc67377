"""The LLM planner's pieces on hand-computed cases: model counts, the collective and memory
formulas, one plan's step time worked out by hand, the plan space, and its errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from schedlab.errors import InputError
from schedlab.perf.llm.hardware import GPUSpec, NodeNet, get_gpu
from schedlab.perf.llm.memory import memory, model_states
from schedlab.perf.llm.model import ModelConfig, get_model, parse_batch_tokens, read_catalog
from schedlab.perf.llm.planner import NoPlanError, Options, best_plan, evaluate_plan, plan
from schedlab.perf.llm.profile import Profile, get_profile, read_profile
from schedlab.perf.llm.space import Plan, PlanGrid, Shape, group_span, parse_plan
from schedlab.perf.llm.steptime import Links, collective, pp_hops

TOY = ModelConfig("toy", layers=2, hidden=64, heads=4, vocab=100, seq_len=32, act="gelu")
GPU = GPUSpec("toy-gpu", 100.0, 10.0, 1.0, 100.0, 100.0)


def test_toy_counts_by_hand() -> None:
    h, f, L, V = 64, 256, 2, 100
    matmul = 4 * h * h + 2 * h * f  # QKV + out, two FFN matrices
    assert TOY.matmul_params_per_layer == matmul
    assert TOY.params_per_layer == matmul + 2 * h  # two RMSNorm weights
    assert TOY.params == L * (matmul + 2 * h) + 2 * V * h + h  # untied, final norm
    fwd = 2 * 32 * matmul + 4 * 32 * 32 * h
    assert TOY.layer_forward_flops(1) == fwd
    assert TOY.step_flops(3, "none") == 3 * 3 * (L * fwd + 2 * 32 * h * V)
    assert TOY.step_flops(3, "full") == TOY.step_flops(3, "none") + 3 * L * fwd


def test_grouped_query_attention_shrinks_kv() -> None:
    gqa = ModelConfig("g", layers=1, hidden=64, heads=8, kv_heads=2, vocab=10, seq_len=8)
    assert gqa.matmul_params_per_layer == 64 * (64 + 2 * 16) + 64 * 64 + 2 * 64 * 256


def test_llama_tensor_count_is_9l_plus_3() -> None:
    m = get_model("llama3-8b")
    assert m.tensors_per_layer * m.layers + m.extra_tensors == 9 * 32 + 3


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"hidden": 100, "heads": 3}, "hidden 100 is not a multiple of heads 3"),
        ({"kv_heads": 3}, "kv_heads 3 must divide heads 4"),
        ({"layers": 0}, "'layers' must be a positive whole number"),
        ({"act": "relu"}, "'act' must be one of gelu, swiglu"),
        # past 2^63 the planner's arithmetic raised OverflowError; the bound is 2^24
        ({"seq_len": 99999999999999999999999}, "'seq_len' must be ≤ 16,777,216"),
        ({"seq_len": 2**24 + 1}, "'seq_len' must be ≤ 16,777,216"),
        ({"vocab": 2**40}, "'vocab' must be ≤ 16,777,216"),
        ({"batch": 2**24 + 1}, "'batch' must be ≤ 16,777,216 sequences"),
    ],
)
def test_inconsistent_model_configs_are_refused(fields: dict, message: str) -> None:
    base = {"layers": 2, "hidden": 64, "heads": 4, "vocab": 100, "seq_len": 32}
    with pytest.raises(InputError, match=message):
        ModelConfig("bad", **{**base, **fields})


def test_catalog_file_errors_name_the_file_and_field(tmp_path) -> None:
    good = tmp_path / "m.toml"
    good.write_text("[models.tiny]\nlayers = 2\nhidden = 64\nheads = 4\nvocab = 10\nseq_len = 8\n")
    assert read_catalog(good)["tiny"].ffn == 256
    bad = tmp_path / "bad.toml"
    bad.write_text("[models.tiny]\nlayers = 2\nhidden = 64\nheads = 5\nvocab = 10\nseq_len = 8\n")
    inconsistent = r"hidden 64 is not a multiple of heads 5 .* in .*bad.toml"
    with pytest.raises(InputError, match=inconsistent):
        read_catalog(bad)
    typo = tmp_path / "typo.toml"
    typo.write_text("[models.tiny]\nlayer = 2\n")
    with pytest.raises(InputError, match="unknown model field 'layer'"):
        read_catalog(typo)
    with pytest.raises(InputError, match="did you mean 'llama3-70b'"):
        get_model("llama3-70")


def test_batch_tokens() -> None:
    assert parse_batch_tokens("4M", get_model("llama3-70b")) == 512
    assert parse_batch_tokens("16777216", get_model("llama3-405b")) == 2048
    with pytest.raises(InputError, match="not a whole number of 8192-token sequences"):
        parse_batch_tokens("1000", get_model("llama3-8b"))
    with pytest.raises(InputError, match="must be a number"):
        parse_batch_tokens("lots", get_model("llama3-8b"))


def test_collective_formula_by_hand() -> None:
    prof = Profile("p", alpha_intra=1e-6, alpha_inter=1e-5)
    links = Links(intra=300e9, nic=50e9, q=8)
    one = lambda *a: float(collective(*a, links, prof)[0])  # noqa: E731
    n = np.array([16])
    # all-reduce of 1 GB over 16 ranks, 8 per node on 2 nodes, 3 calls
    got = one(2.0, n, np.array([8]), np.array([2]), 1e9, 3.0)
    want = 2 * (7 / 8 * 1e9 / 300e9 + 1 / 2 * 1e9 / 50e9) + 2 * 15 * 3 * 1e-5
    assert got == pytest.approx(want)
    # one rank per node (8 groups share the NICs): B_inter = 50e9 / 8
    got = one(1.0, np.array([4]), np.array([1]), np.array([4]), 1e9, 1.0)
    assert got == pytest.approx(3 / 4 * 1e9 / (50e9 / 8) + 3 * 1e-5)
    assert one(2.0, np.array([1]), np.array([1]), np.array([1]), 1e9, 1.0) == 0.0


def test_group_span() -> None:
    g_l, nodes = group_span(np.array([1, 8, 2, 16]), np.array([8, 4, 16, 2]), 8)
    assert g_l.tolist() == [8, 1, 4, 1]
    assert nodes.tolist() == [1, 4, 4, 2]


def test_model_states_table() -> None:
    grid = PlanGrid.of([Plan(d=4, z=z, zg=4) for z in range(4)])
    psi = np.full(4, 1e9)
    got = model_states(psi, grid, Profile("p", grad_bytes=2))
    assert got.tolist() == [16e9, 4e9 + 3e9, 2e9 + 3.5e9, 4e9]


def test_one_gpu_step_time_by_hand() -> None:
    prof = Profile("p", eta=0.5, k_e=100.0, k_s=0.0, flash=True)
    got = evaluate_plan(TOY, Plan(b=2, m=3), GPU, Shape.uniform(1, 1), prof, NodeNet(1e9))
    rate, hbm = 100e12 * 0.5, 1e12
    f_stage = 2 * TOY.layer_forward_flops(2) + TOY.logits_forward_flops(2)
    q = 100.0 * 2 * 32 * 64 * 2  # k_e·b·s·h per layer, two layers
    micro = 3 * f_stage / rate + q / hbm
    opt = 16 * TOY.params / hbm  # all parameters on the one GPU
    assert got.step_seconds == pytest.approx(3 * micro + opt)
    assert got.tokens_per_s == pytest.approx(6 * 32 / got.step_seconds)
    assert got.mfu == pytest.approx(TOY.step_flops(6) / (got.step_seconds * 100e12))


def test_pipeline_bubble_and_memory_stages() -> None:
    prof = get_profile("generic")
    model = get_model("llama3-8b")
    shape = Shape.uniform(1, 8)
    a = evaluate_plan(model, Plan(p=4, d=2, zg=2, m=8), get_gpu("H100"), shape, prof)
    b = evaluate_plan(model, Plan(p=4, d=2, zg=2, m=16), get_gpu("H100"), shape, prof)
    # bubble (p − 1) micro-batch times: the same absolute time, a smaller share with more m
    assert a.breakdown["bubble"] > 0
    assert b.breakdown["bubble"] / b.step_seconds < a.breakdown["bubble"] / a.step_seconds
    grid = PlanGrid.of([Plan(p=4, d=2, zg=2, m=1), Plan(p=4, d=2, zg=2, m=8)])
    mem = memory(model, grid, prof)
    # the first stage holds min(p, m) micro-batches in flight
    assert mem.first_stage[1] > mem.first_stage[0]


def test_plan_strings() -> None:
    assert parse_plan("t=8,p=4,c=1,z=1,b=1,r=selective") == {
        "t": 8, "p": 4, "c": 1, "z": 1, "b": 1, "r": "selective"
    }  # fmt: skip
    label = Plan(t=8, p=4, d=2, zg=2, r="full").label()
    assert Plan(**parse_plan(label)) == Plan(t=8, p=4, d=2, zg=2, r="full")
    for text, message in (
        ("t=0", "≥ 1"),
        ("z=4", "0…3"),
        ("q=1", "KEY=VALUE"),
        ("r=half", "r must"),
        ("t=8,t=4", r"t is given twice \('t=4' after t=8\)"),
        ("zero=1;z=2", "z is given twice"),
    ):
        with pytest.raises(InputError, match=message):
            parse_plan(text)


def test_no_plan_names_memory_and_by_how_much() -> None:
    with pytest.raises(
        NoPlanError, match=r"memory — the nearest miss needs [\d.]+ GB per GPU, [\d.]+ GB over"
    ):
        best_plan(
            get_model("llama3-405b"),
            16,
            get_gpu("H100"),
            Shape.uniform(2, 8),
            get_profile("generic"),
        )


def test_no_plan_names_the_fixed_field_rule() -> None:
    opts = Options.of({"t": 16})
    with pytest.raises(NoPlanError, match="tp-node — the job has 8 GPUs on a node"):
        best_plan(
            get_model("llama3-8b"),
            64,
            get_gpu("H100"),
            Shape.uniform(4, 8),
            get_profile("generic"),
            options=opts,
        )
    with pytest.raises(NoPlanError, match="batch — B = 7 sequences"):
        best_plan(
            get_model("llama3-8b"),
            7,
            get_gpu("H100"),
            Shape.uniform(4, 8),
            get_profile("generic"),
            options=Options.of({"t": 8, "p": 1, "c": 1}),
        )


def test_uneven_allocation_limits_tp_to_the_smallest_node() -> None:
    model = get_model("llama3-8b")
    search = plan(model, 48, get_gpu("H100"), Shape((8, 4), 8), get_profile("generic"), keep=500)
    assert search.ranked and all(r.plan.t in (1, 2, 4) for r in search.ranked)


def test_profile_files(tmp_path) -> None:
    path = tmp_path / "p.toml"
    prof = get_profile("internevo-a100")
    path.write_text(prof.to_toml())
    again = read_profile(path, name="internevo-a100")
    assert again == prof
    bad = tmp_path / "bad.toml"
    bad.write_text("eta = 2.0\n")
    with pytest.raises(InputError, match=r"'eta' must be in \(0, 1\]"):
        read_profile(bad)
    with pytest.raises(InputError, match="unknown profile"):
        get_profile("megatron-sc21")
    assert math.isnan(get_profile("generic").fit_max_error)


def test_sizes_past_the_bounds_are_refused_before_any_arithmetic() -> None:
    with pytest.raises(InputError, match="the planner takes at most 1,048,576"):
        Shape.uniform(10**20, 8)
    with pytest.raises(InputError, match="more than the planner takes"):
        Shape((8,) * 131_073, 8)
    with pytest.raises(InputError, match="global batch must be ≤ 16,777,216 sequences"):
        plan(TOY, 10**30, GPU, Shape.uniform(1, 1), get_profile("generic"))
    with pytest.raises(InputError, match="at most 16,777,216 sequences a step"):
        parse_batch_tokens("1e30", TOY)
    with pytest.raises(InputError, match="'--nic-gbps' must be a finite rate > 0"):
        NodeNet.from_gbps(math.inf)


@pytest.mark.parametrize(
    ("t", "c", "sp", "d", "p", "q", "hops"),
    [
        (4, 1, "megatron", 1, 16, 8, (True, True)),  # two stages a node: every other hop crosses
        (8, 1, "megatron", 1, 2, 8, (False, True)),  # a stage fills a node: every hop crosses
        (1, 1, "none", 2, 4, 8, (True, False)),  # all four stages on one node
        (1, 1, "none", 3, 2, 8, (True, False)),  # 6 of 8 GPUs: one node
        (1, 1, "none", 3, 3, 8, (True, True)),  # 9 GPUs: rank 7 → 10 crosses, 0 → 3 does not
        (2, 2, "ulysses", 1, 2, 8, (True, False)),  # the stage is t·c = 4 ranks
        (2, 2, "ulysses", 1, 4, 8, (True, True)),
        (2, 1, "none", 4, 1, 8, (False, False)),  # no pipeline
    ],
)
def test_pipeline_hops_by_hand(t, c, sp, d, p, q, hops) -> None:
    grid = PlanGrid.of([Plan(t=t, c=c, sp=sp, d=d, p=p)])
    intra, inter = pp_hops(grid, q)
    assert (bool(intra[0]), bool(inter[0])) == hops


def test_pipeline_hops_match_rank_by_rank_placement() -> None:
    """The closed form against the definition: rank r of a stage (S = t·c·d ranks) sends to
    r + S; the hop crosses nodes when ⌊r/q⌋ ≠ ⌊(r + S)/q⌋, ranks numbered node by node."""
    plans, expect, qs = [], [], []
    for q in (1, 2, 3, 4, 6, 8):
        for stride in range(1, 13):
            for p in range(1, 7):
                src = np.arange((p - 1) * stride)
                cross = src // q != (src + stride) // q
                plans.append(Plan(d=stride, p=p))
                expect.append((bool((~cross).any()), bool(cross.any())))
                qs.append(q)
    for q in sorted(set(qs)):
        idx = [i for i, qq in enumerate(qs) if qq == q]
        intra, inter = pp_hops(PlanGrid.of([plans[i] for i in idx]), q)
        assert list(zip(intra.tolist(), inter.tolist(), strict=True)) == [expect[i] for i in idx]


def test_cross_node_pipeline_step_by_hand() -> None:
    """TOY as p = 4, d = 2 on 2 nodes of 4 GPUs: stages 0, 1 on node 0, stages 2, 3 on node 1,
    so the 1 → 2 hop crosses and paces the pipeline. The old rule (stage stride t·d = 2 < 4:
    intra-node) charged NVLink. By hand: message 2·b·s·h/t = 2·1·32·64 = 4,096 B at a rank's
    NIC share 1e9/4 B/s, plus α_inter = 10 µs, forward and backward, in each of m + p − 1 = 7
    micro-batch times."""
    prof = Profile("p", alpha_intra=5e-6, alpha_inter=10e-6)
    fixed = Plan(p=4, d=2, zg=2, b=1, m=4)
    two = evaluate_plan(TOY, fixed, GPU, Shape.uniform(2, 4), prof, NodeNet(1e9))
    assert two.breakdown["pp"] == pytest.approx(7 * 2 * (4096 / 2.5e8 + 10e-6))
    # the same plan on one node of 8: every hop on NVLink (100 GB/s), α_intra
    one = evaluate_plan(TOY, fixed, GPU, Shape.uniform(1, 8), prof, NodeNet(1e9))
    assert one.breakdown["pp"] == pytest.approx(7 * 2 * (4096 / 100e9 + 5e-6))
