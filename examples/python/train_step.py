"""Training with attn_tune.attention: a small decoder-only transformer learns a synthetic copy task
twice from the same seed on the same batches, once with PyTorch's SDPA and once with
attn_tune.attention (its forward and backward), under bf16 autocast; prints the two loss curves
side by side, the final gap and each run's mean step time (CUDA events, after warm-up), and
writes loss.csv (step, loss_sdpa, loss_attn_tune) and, where matplotlib is importable, loss.png.

    python3 examples/python/train_step.py [--steps 300] [--table results/h200.json] [--out ./train_step_out]

The copy task: each sequence is random tokens followed by the same tokens again; the loss is on
the second half, which only attention back to the first half can predict, so a falling loss says
the attention's gradients train. The two runs start equal and drift apart by rounding (bf16 sums
in other orders), so the curves agree closely rather than bit for bit. Needs PyTorch with CUDA and
libattn_tune.so of API version 7 (next to the package, installed, or ATTN_TUNE_LIBRARY).
"""
import argparse
import csv
import os
import sys

import torch
import torch.nn.functional as F

import attn_tune


class Block(torch.nn.Module):
    def __init__(self, dim, heads, attention):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.norm1, self.norm2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim, bias=False)
        self.proj = torch.nn.Linear(dim, dim, bias=False)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim))
        self.attention = attention

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, self.heads, self.head_dim).unbind(2)
        # [B, N, H, D] views seen as [B, H, N, D]: what both attentions take without a copy forward
        o = self.attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        x = x + self.proj(o.transpose(1, 2).reshape(b, n, -1))
        return x + self.mlp(self.norm2(x))


class Decoder(torch.nn.Module):
    def __init__(self, vocab, seq, dim, heads, layers, attention):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.pos = torch.nn.Parameter(0.02 * torch.randn(seq, dim))
        self.blocks = torch.nn.ModuleList(Block(dim, heads, attention) for _ in range(layers))
        self.norm, self.head = torch.nn.LayerNorm(dim), torch.nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def copy_batch(step, args):
    """Step's batch, the same in both runs (a generator of its own): inputs are the sequence shifted
    right by one behind token 0, targets the sequence; its second half repeats its first."""
    g = torch.Generator(device="cuda").manual_seed(args.seed * 1_000_003 + step)
    half = (args.seq + 1) // 2
    first = torch.randint(1, args.vocab, (args.batch, half), device="cuda", generator=g)
    targets = torch.cat([first, first], dim=1)[:, : args.seq]
    inputs = torch.cat([torch.zeros_like(targets[:, :1]), targets[:, :-1]], dim=1)
    return inputs, targets


def train(attention, args):
    """Loss per step (floats) and the mean step time in ms after the warm-up steps."""
    torch.manual_seed(args.seed)  # the same initial weights in both runs
    model = Decoder(args.vocab, args.seq, args.dim, args.heads, args.layers, attention).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.0)
    warm = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / 30))
    half = (args.seq + 1) // 2
    losses, events = [], []
    for step in range(args.steps):
        inputs, targets = copy_batch(step, args)  # not timed
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(inputs)
        loss = F.cross_entropy(logits[:, half:].float().reshape(-1, args.vocab), targets[:, half:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        warm.step()
        opt.zero_grad(set_to_none=True)
        stop.record()
        losses.append(loss.detach())  # read once at the end: no synchronization per step
        events.append((start, stop))
    torch.cuda.synchronize()
    times = [a.elapsed_time(b) for a, b in events[args.warmup:]]
    return torch.stack(losses).tolist(), sum(times) / len(times)


def plot(path, rows):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    steps, sdpa, ours = zip(*rows)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, sdpa, label="SDPA")
    ax.plot(steps, ours, label="attn_tune.attention", linestyle="--")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (copied half)")
    ax.set_yscale("log")
    ax.legend()
    ax.set_title("copy task, same seed and batches")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20, help="steps left out of the mean step time")
    ap.add_argument("--print-every", type=int, default=25)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--table", default=None, help="a tuned table for attn_tune (its pass bwd entries too)")
    ap.add_argument("--out", default="./train_step_out")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("train_step.py needs a CUDA GPU: torch.cuda.is_available() is False")
    if args.dim % args.heads or (args.dim // args.heads) % 8:
        ap.error(f"--dim {args.dim} / --heads {args.heads}: the head dim must be a whole multiple of 8")
    if not 0 <= args.warmup < args.steps:
        ap.error(f"--warmup {args.warmup} must be at least 0 and below --steps {args.steps}")
    if args.seq < 2 or args.vocab < 2 or args.print_every < 1:
        ap.error("--seq and --vocab must be at least 2, --print-every at least 1")

    def sdpa(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)  # N_q == N_kv: top-left = bottom-right

    def tuned(q, k, v):
        return attn_tune.attention(q, k, v, causal=True, table=args.table)

    # attn_tune first: a library without the backward fails at once, not after the SDPA run.
    ours, ms_ours = train(tuned, args)
    ref, ms_ref = train(sdpa, args)

    print(f"{'step':>6} {'SDPA':>10} {'attn_tune':>10} {'|gap|':>10}")
    rows = list(zip(range(args.steps), ref, ours))
    for step, a, b in rows:
        if step % args.print_every == 0 or step == args.steps - 1:
            print(f"{step:>6} {a:>10.4f} {b:>10.4f} {abs(a - b):>10.2e}")
    tail = max(1, args.steps // 10)
    mean_ref, mean_ours = sum(ref[-tail:]) / tail, sum(ours[-tail:]) / tail
    print(f"final loss: SDPA {ref[-1]:.4f}, attn_tune {ours[-1]:.4f} (gap {abs(ref[-1] - ours[-1]):.2e}); "
          f"mean of the last {tail} steps: SDPA {mean_ref:.4f}, attn_tune {mean_ours:.4f} "
          f"(gap {abs(mean_ref - mean_ours):.2e}); loss at step 0: {ref[0]:.4f}")
    print(f"mean step time after {args.warmup} warm-up steps: SDPA {ms_ref:.3f} ms, attn_tune {ms_ours:.3f} ms "
          f"({ms_ref / ms_ours:.2f}x)")

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "loss.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["step", "loss_sdpa", "loss_attn_tune"])
        w.writerows((step, f"{a:.6f}", f"{b:.6f}") for step, a, b in rows)
    wrote = ["loss.csv"] + (["loss.png"] if plot(os.path.join(args.out, "loss.png"), rows) else [])
    print(f"wrote {', '.join(wrote)} to {args.out}" + ("" if "loss.png" in wrote else " (no matplotlib: no plot)"))


if __name__ == "__main__":
    main()
