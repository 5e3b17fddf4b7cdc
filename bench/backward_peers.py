#!/usr/bin/env python3
"""Our backward pass beside PyTorch's: one timing rule (bench/peers.py's time_ms), one process.

For each shape: attn-backward-cubins compiles our backward's variants (kernels/fa2_bwd.cuh) and this
process runs each through the CUDA driver (ctypes) on PyTorch's tensors; the fastest is ours (a tune
by this rule, until the tool tunes the backward itself: issue 22). Beside it, on the same Q, K, V,
dO: SDPA's backward with the cuDNN and the flash backends (torch.autograd.grad of the forward's
output, the graph kept), and with --with-flex FlexAttention's (torch.compile max-autotune).

Our inputs O and LSE are SDPA flash's forward output and logsumexp (natural log). Correctness, once
per shape: our best's dQ, dK and dV against float32 math's gradients (autograd through
softmax(Q K^T scale) V in float32), as the max abs error over the gradient's max abs value, beside
the same for SDPA's backends; MISMATCH when ours exceeds twice the worst peer's plus 1e-3.

TFLOPS of a backward = 2.5 x the forward's FLOPs (FlashAttention's convention: five matrix products
to the forward's two), 4*B*H*N^2*D*2.5, halved when causal.

    python3 bench/backward_peers.py --tool build-gpu/attn-backward-cubins --out /tmp/bwd
    python3 bench/backward_peers.py --tool ... --shapes "4,32,4096,128;4,32,4096,128c" --out /tmp/bwd
"""
import argparse
import ctypes
import json
import os
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers import time_ms  # noqa: E402  the one rule

YARDSTICK = "4,32,4096,128;16,16,1024,64;8,16,2048,128;1,32,16384,128;2,16,4096,256;32,32,512,64"


def parse_shapes(text):
    out = []
    for item in filter(None, text.split(";")):
        causal = item.endswith("c")
        b, h, n, d = (int(x) for x in item.rstrip("c").split(","))
        out.append((b, h, n, d, causal))
    return out


class driver:
    """The CUDA driver's module and launch calls, through ctypes (PyTorch's context is current)."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"{what} failed: CUresult {rc}")

    def load(self, cubin_path, launches):
        data = open(cubin_path, "rb").read()
        module = ctypes.c_void_p()
        self.check(self.lib.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(data)), "cuModuleLoadData")
        out = []
        for l in launches:
            fn = ctypes.c_void_p()
            self.check(self.lib.cuModuleGetFunction(ctypes.byref(fn), module, l["symbol"].encode()), l["symbol"])
            if l["shared"] > 48 * 1024:
                self.check(self.lib.cuFuncSetAttribute(fn, 8, ctypes.c_int(l["shared"])), "cuFuncSetAttribute")
            out.append((fn, l))
        return module, out

    def launch(self, kernels, params, stream):
        buf = ctypes.create_string_buffer(params, len(params))
        args = (ctypes.c_void_p * 1)(ctypes.addressof(buf))  # the one argument: the struct, by value
        for fn, l in kernels:
            g, b = l["grid"], l["block"]
            self.check(self.lib.cuLaunchKernel(fn, g[0], g[1], g[2], b[0], b[1], b[2], l["shared"], ctypes.c_void_p(stream),
                                               args, None), "cuLaunchKernel")


def pack_params(q, k, v, o, d_o, lse, delta, dq, dk, dv, dq_accum, scale, causal):
    """kernels/common/bwd_params.cuh's bwd_params, [B,H,N,D] contiguous, padded to its 8-byte alignment.
    dq_accum: the atomic-dQ variants' fp32 workspace ([B,H,N,D] floats). No window: causal is a right
    side of 0 (kernel_window's rule), else both sides -1. No softcap (its two floats 0); O's and V's
    strides Q's and K's (V has Q's head dim); not packed (null offsets)."""
    b, h, nq, d = q.shape
    hkv, nkv = k.shape[1], k.shape[2]
    raw = struct.pack("@11P6q5i2f2i2f6q2P2i", *(t.data_ptr() for t in (q, k, v, o, d_o, lse, delta, dq, dk, dv, dq_accum)),
                      h * nq * d, nq * d, d, hkv * nkv * d, nkv * d, d, nq, nkv, h, h // hkv, b,
                      scale * 1.4426950408889634, scale, -1, 0 if causal else -1, 0.0, 0.0,
                      h * nq * d, nq * d, d, hkv * nkv * d, nkv * d, d, 0, 0, 0, 0)
    return raw + b"\0" * (-len(raw) % 8)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", required=True, help="attn-backward-cubins")
    ap.add_argument("--shapes", default=";".join(f"{s};{s}c" for s in YARDSTICK.split(";")))
    ap.add_argument("--configs", default="", help="comma-separated variant names (default: every default one)")
    ap.add_argument("--with-flex", action="store_true")
    ap.add_argument("--profile", action="store_true",
                    help="run each variant and SDPA's cuDNN backward once, untimed (under ncu)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    cu = driver()
    rows = []
    for b, h, n, d, causal in parse_shapes(args.shapes):
        label = f"{b},{h},{n},{d}{'c' if causal else ''}"
        flops = 4 * b * h * n * n * d * 2.5 / (2 if causal else 1)
        q, k, v, d_o = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(4))
        scale = d ** -0.5
        o, lse = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal, False, scale=scale)[:2]
        o, lse = o.contiguous(), lse.contiguous()
        assert tuple(lse.shape) == (b, h, n) and lse.dtype == torch.float32, (lse.shape, lse.dtype)
        delta = torch.empty_like(lse)
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        dq_accum = torch.empty(b, h, n, d, device="cuda", dtype=torch.float32)
        params = pack_params(q, k, v, o, d_o, lse, delta, dq, dk, dv, dq_accum, scale, causal)
        cmd = [args.tool, "--shape", f"{b},{h},{n},{d}", "--arch", "sm_90a", "--out", os.path.join(args.out, "cubins", label)]
        if causal:
            cmd.append("--causal")
        for c in filter(None, args.configs.split(",")):
            cmd += ["--config", c]
        t0 = time.monotonic()
        variants = [json.loads(line) for line in subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()]
        compile_s = time.monotonic() - t0
        if not variants:
            print(f"  {label}: no variant of ours takes this shape (attn-backward-cubins pruned them all)", flush=True)
            rows.append({"shape": label, "causal": causal, "status": "none of ours"})
            continue
        stream = torch.cuda.current_stream().cuda_stream
        ours = []
        for var in variants:
            _, kernels = cu.load(var["cubin"], var["launches"])
            fn = lambda: cu.launch(kernels, params, stream)  # noqa: E731
            fn()
            if args.profile:
                continue
            ms, reps = time_ms(fn)
            ours.append((ms, var["config"], kernels))
            print(f"  {label} {var['config']}: {ms:.4f} ms ({var['registers']} registers)", flush=True)
        if args.profile:
            qg, kg, vg = (x.detach().clone().requires_grad_() for x in (q, k, v))
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal, scale=scale)
            torch.autograd.grad(out, (qg, kg, vg), d_o)
            torch.cuda.synchronize()
            continue
        ours.sort(key=lambda x: x[0])
        best_ms, best_name, best_kernels = ours[0]
        cu.launch(best_kernels, params, stream)
        torch.cuda.synchronize()
        ours_grads = (dq.clone(), dk.clone(), dv.clone())

        # float32 math's gradients: the yardstick of everyone's error (chunked over batch and heads).
        def math_grads():
            out = [torch.empty_like(x, dtype=torch.float32) for x in (q, k, v)]
            step = max(1, (1 << 28) // (n * n * 4))
            flat = [x.reshape(b * h, n, d) for x in (q, k, v, d_o)]
            outs = [x.view(b * h, n, d) for x in out]
            for s in range(0, b * h, step):
                qs, ks, vs = (x[s:s + step].float().requires_grad_() for x in flat[:3])
                sc = qs @ ks.transpose(1, 2) * scale
                if causal:
                    sc = sc.masked_fill(torch.ones(n, n, dtype=torch.bool, device="cuda").triu(1), float("-inf"))
                (torch.softmax(sc, -1) @ vs).backward(flat[3][s:s + step].float())
                for dst, src in zip(outs, (qs.grad, ks.grad, vs.grad)):
                    dst[s:s + step] = src
            return out

        ref = math_grads()

        def rel_err(grads):
            return max(float((g.float() - r).abs().max() / r.abs().max()) for g, r in zip(grads, ref))

        result = {"shape": label, "causal": causal, "ours_config": best_name, "ours_ms": best_ms,
                  "ours_tflops": flops / best_ms / 1e9, "ours_error": rel_err(ours_grads), "compile_s": compile_s,
                  "variants": len(ours)}
        peers = {"sdpa-cudnn": SDPBackend.CUDNN_ATTENTION, "sdpa-flash": SDPBackend.FLASH_ATTENTION}
        worst_peer_err = 0.0
        for name, backend in peers.items():
            qg, kg, vg = (x.detach().clone().requires_grad_() for x in (q, k, v))
            try:
                with sdpa_kernel(backend):
                    out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal, scale=scale)
                fn = lambda: torch.autograd.grad(out, (qg, kg, vg), d_o, retain_graph=True)  # noqa: E731
                grads = fn()
                ms, _ = time_ms(fn)
                err = rel_err(grads)
                worst_peer_err = max(worst_peer_err, err)
                result[f"{name}_ms"], result[f"{name}_error"] = ms, err
                result[f"{name}_ratio"] = ms / best_ms
            except RuntimeError as e:
                result[f"{name}_ms"] = None
                print(f"  {label} {name}: not run ({str(e).splitlines()[0]})", flush=True)
        if args.with_flex:
            from torch.nn.attention.flex_attention import create_block_mask, flex_attention
            # The timing reruns one graph's backward (retain_graph): a compiled backward with donated
            # buffers refuses that (seen at the third shape of a run), so none are donated.
            import torch._functorch.config as functorch_config
            functorch_config.donated_buffer = False
            try:
                flex = torch.compile(flex_attention, mode="max-autotune-no-cudagraphs")
                mask = create_block_mask(lambda bb, hh, i, j: i >= j, None, None, n, n) if causal else None
                qg, kg, vg = (x.detach().clone().requires_grad_() for x in (q, k, v))
                out = flex(qg, kg, vg, block_mask=mask, scale=scale)
                fn = lambda: torch.autograd.grad(out, (qg, kg, vg), d_o, retain_graph=True)  # noqa: E731
                grads = fn()
                ms, _ = time_ms(fn)
                result["flex_ms"], result["flex_error"], result["flex_ratio"] = ms, rel_err(grads), ms / best_ms
            except RuntimeError as e:  # one peer's failure does not end the run
                result["flex_ms"] = None
                print(f"  {label} flex: not run ({str(e).splitlines()[0]})", flush=True)
        result["status"] = "ok" if result["ours_error"] <= 2 * worst_peer_err + 1e-3 else "MISMATCH"
        rows.append(result)
        print(json.dumps(result), flush=True)
        del ref, q, k, v, d_o, o, lse, dq, dk, dv
        torch.cuda.empty_cache()

    with open(os.path.join(args.out, "backward.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print(f"\n{torch.cuda.get_device_name()}  torch {torch.__version__}  cuDNN {torch.backends.cudnn.version()}")
    print("| shape | ours ms | ours TFLOPS | cuDNN / ours | flash / ours | flex / ours | ours config | error ours / cuDNN | status |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "ours_ms" not in r:
            print(f"| {r['shape']} | - | - | - | - | - | - | - | {r['status']} |")
            continue
        f = lambda k: f"{r[k]:.2f}" if r.get(k) else "-"  # noqa: E731
        print(f"| {r['shape']} | {r['ours_ms']:.3f} | {r['ours_tflops']:.0f} | {f('sdpa-cudnn_ratio')} | "
              f"{f('sdpa-flash_ratio')} | {f('flex_ratio')} | {r['ours_config']} | "
              f"{r['ours_error']:.1e} / {r.get('sdpa-cudnn_error', float('nan')):.1e} | {r['status']} |")


if __name__ == "__main__":
    main()
