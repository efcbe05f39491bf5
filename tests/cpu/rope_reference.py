#!/usr/bin/env python3
"""Reference RoPE inv_freq / attention_scaling values for tests/cpu/test_rope.cpp.

Follows transformers/modeling_rope_utils.py (_compute_default/linear_scaling/llama3/yarn_parameters)
step by step, emulating torch's float32 tensor arithmetic with f32() (no torch/numpy needed).
Run: python3 tests/cpu/rope_reference.py
"""
import math
import struct


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def pos_freqs(base, dim):  # base ** (arange(0, dim, 2).float() / dim), float32
    return [f32(f32(base) ** f32(f32(2 * i) / dim)) for i in range(dim // 2)]


def default(base, dim):
    return [f32(1.0 / p) for p in pos_freqs(base, dim)]


def linear(base, dim, factor):
    return [f32(x / factor) for x in default(base, dim)]


def llama3(base, dim, factor, lff, hff, old):
    out = []
    low_wl, high_wl = f32(old / lff), f32(old / hff)
    for f in default(base, dim):
        wl = f32(f32(2 * math.pi) / f)
        ll = f32(f / factor) if wl > low_wl else f
        s = f32(f32(f32(old / wl) - lff) / (hff - lff))
        sm = f32(f32(f32(f32(1 - s) * ll) / factor) + f32(s * ll))
        out.append(sm if (not wl < high_wl) and (not wl > low_wl) else ll)
    return out


def yarn(base, dim, factor, orig, beta_fast=32, beta_slow=1, truncate=True, attention_factor=None):
    def cdim(n):
        return (dim * math.log(orig / (n * 2 * math.pi))) / (2 * math.log(base))
    low, high = cdim(beta_fast), cdim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    pf = pos_freqs(base, dim)
    out = []
    for i, p in enumerate(pf):
        ramp = min(max(f32(f32(i - low) / f32(high - low)), 0.0), 1.0)
        ef = f32(1 - ramp)
        out.append(f32(f32(f32(1.0 / f32(factor * p)) * f32(1 - ef)) + f32(f32(1.0 / p) * ef)))
    af = attention_factor if attention_factor is not None else (
        1.0 if factor <= 1 else 0.1 * math.log(factor) + 1.0)
    return out, af, (low, high)


def show(name, v, idx):
    print(name, " ".join(f"[{i}]={v[i]:.9g}" for i in idx))


if __name__ == "__main__":
    show("default theta=10000 dim=8", default(10000.0, 8), range(4))
    show("linear theta=10000 dim=8 factor=4", linear(10000.0, 8, 4.0), range(4))
    l3 = llama3(500000.0, 128, 8.0, 1.0, 4.0, 8192)
    show("llama3 theta=5e5 dim=128 f=8 lff=1 hff=4 old=8192", l3, [0, 10, 20, 25, 30, 40, 50, 63])
    y, af, lh = yarn(1000000.0, 128, 4.0, 32768)
    show(f"yarn theta=1e6 dim=128 f=4 orig=32768 low,high={lh} af={af:.9g}", y, [0, 10, 20, 30, 40, 63])
    y2, af2, lh2 = yarn(10000.0, 64, 8.0, 2048, beta_fast=16, beta_slow=2, truncate=False,
                        attention_factor=1.25)
    show(f"yarn theta=1e4 dim=64 f=8 orig=2048 bf=16 bs=2 notrunc low,high={lh2} af={af2}", y2,
         [0, 5, 8, 12, 20, 31])
    show("default theta=10000 dim=24 (head_dim 32, partial 0.75)", default(10000.0, 24), [0, 1, 11])
