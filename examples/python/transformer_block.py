"""A small transformer block with PyTorch's SDPA and with attn_tune.forward: same weights, same
input; prints the largest difference of the outputs and the time of each (CUDA events, warm).

    python3 examples/python/transformer_block.py [--table results/h200.json] [--causal]

Needs PyTorch with CUDA and libattn_tune.so (next to the package, installed, or ATTN_TUNE_LIBRARY).
"""
import argparse

import torch
import torch.nn.functional as F

import attn_tune
from timing import median_ms


class Block(torch.nn.Module):
    def __init__(self, dim, heads, kv_heads, attention):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.norm1, self.norm2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, (heads + 2 * kv_heads) * self.head_dim, bias=False)
        self.proj = torch.nn.Linear(dim, dim, bias=False)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim))
        self.attention = attention

    def forward(self, x):
        b, n, _ = x.shape
        qkv = self.qkv(self.norm1(x)).view(b, n, self.heads + 2 * self.kv_heads, self.head_dim)
        # [B, N, H, D] views seen as [B, H, N, D]: the bshd layout, no copy for attn_tune
        q = qkv[:, :, : self.heads].transpose(1, 2)
        k = qkv[:, :, self.heads: self.heads + self.kv_heads].transpose(1, 2)
        v = qkv[:, :, self.heads + self.kv_heads:].transpose(1, 2)
        o = self.attention(q, k, v)
        x = x + self.proj(o.transpose(1, 2).reshape(b, n, -1))
        return x + self.mlp(self.norm2(x))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", default=None)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--dim", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=4)
    args = ap.parse_args()
    group = args.heads // args.kv_heads

    def sdpa(q, k, v):
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        return F.scaled_dot_product_attention(q, k, v, is_causal=args.causal)  # N_q == N_kv: top-left = bottom-right

    def tuned(q, k, v):
        return attn_tune.forward(q, k, v, causal=args.causal, table=args.table)

    torch.manual_seed(0)
    reference = Block(args.dim, args.heads, args.kv_heads, sdpa).cuda().to(torch.bfloat16)
    ours = Block(args.dim, args.heads, args.kv_heads, tuned).cuda().to(torch.bfloat16)
    ours.load_state_dict(reference.state_dict())
    x = torch.randn(args.batch, args.seq, args.dim, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        a, b = reference(x), ours(x)
        print(f"max |SDPA - attn_tune| = {(a.float() - b.float()).abs().max().item():.3e} "
              f"(output scale {a.float().abs().max().item():.2f})")
        t_ref, t_ours = median_ms(lambda: reference(x)), median_ms(lambda: ours(x))
    print(f"block: SDPA {t_ref:.3f} ms, attn_tune {t_ours:.3f} ms ({t_ref / t_ours:.2f}x)")


if __name__ == "__main__":
    main()
