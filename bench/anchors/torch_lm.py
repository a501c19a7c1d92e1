"""PyTorch anchor for bench/lm.ts: the same GPT-2 (6 layers, 384 wide) and small Llama (6 layers,
384 wide, 2 key/value heads), written here in plain PyTorch 1.13 (no transformers), with a
hand-written preallocated KV cache. Figures: train tokens/s (full, and LoRA on the same layers as
the bench) and greedy generation tokens/s through the cache at batch 1 and batch 8 (prefill
included).

    /usr/bin/python3 bench/anchors/torch_lm.py [--threads 1,2] [--models gpt2,llama] [--vocab 8192]
        [--steps 3] [--batch 8] [--context 128] [--prompt 16] [--new-tokens 128]
            one JSON line per figure and thread count
    /usr/bin/python3 bench/anchors/torch_lm.py --serve [same sizes]
            one round per stdin line {"model", "what", "mode" | "batch", "threads"}, answering
            {"tokens_per_s"} (bench/lm.ts alternates with flockml round by round)

OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are removed from this process's environment before torch
(and OpenBLAS) load: set on this machine, they force an older OpenBLAS kernel.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

REMOVED = {v: os.environ.pop(v, None) for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}

import torch  # noqa: E402 (after the environment is cleaned)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


class LoraLinear(nn.Module):
    """base(x) + (alpha / r) * B(A(x)), the base frozen (PEFT's layout)."""

    def __init__(self, base, r=8, alpha=16):
        super().__init__()
        self.base_layer = base
        self.lora_A = nn.Linear(base.in_features, r, bias=False)
        self.lora_B = nn.Linear(r, base.out_features, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / r

    def forward(self, x):
        return self.base_layer(x) + self.lora_B(self.lora_A(x)) * self.scaling


class Cache:
    """Keys and values [layers][batch, kv_heads, max_len, head_dim], filled in place."""

    def __init__(self, layers, batch, kv_heads, head_dim, max_len):
        self.k = [torch.zeros(batch, kv_heads, max_len, head_dim) for _ in range(layers)]
        self.v = [torch.zeros(batch, kv_heads, max_len, head_dim) for _ in range(layers)]
        self.length = 0

    def update(self, layer, k, v):
        t = k.shape[2]
        end = self.length + t
        self.k[layer][:, :, self.length:end] = k
        self.v[layer][:, :, self.length:end] = v
        return self.k[layer][:, :, :end], self.v[layer][:, :, :end]


def attend(q, k, v, causal):
    """softmax(q k^T / sqrt(d)) v over k, v [b, kv_heads, s, d] (grouped-query: repeated to q's heads)."""
    b, h, t, d = q.shape
    if k.shape[1] != h:
        rep = h // k.shape[1]
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
    scores = q @ k.transpose(-1, -2) / math.sqrt(d)
    if causal and t > 1:
        s = k.shape[2]
        mask = torch.ones(t, s, dtype=torch.bool).triu(s - t + 1)
        scores = scores.masked_fill(mask, float("-inf"))
    return (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, h * d)


class GPT2Block(nn.Module):
    def __init__(self, d, heads, layer):
        super().__init__()
        self.heads, self.layer = heads, layer
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)

    def forward(self, x, cache):
        b, t, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=-1)
        q, k, v = (y.view(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
        if cache is not None:
            k, v = cache.update(self.layer, k, v)
        x = x + self.c_proj(attend(q, k, v, True))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, vocab, positions, d=384, layers=6, heads=6):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(positions, d)
        self.h = nn.ModuleList(GPT2Block(d, heads, i) for i in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.cache_shape = (layers, heads, d // heads)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, 0, 0.02)

    def forward(self, ids, cache=None, last_only=False):
        start = cache.length if cache is not None else 0
        pos = torch.arange(start, start + ids.shape[1])
        x = self.wte(ids) + self.wpe(pos)
        for block in self.h:
            x = block(x, cache)
        x = self.ln_f(x)
        if last_only:
            x = x[:, -1:]
        if cache is not None:
            cache.length += ids.shape[1]
        return x @ self.wte.weight.t()


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class LlamaLayer(nn.Module):
    def __init__(self, d, inter, heads, kv_heads, layer):
        super().__init__()
        self.heads, self.kv_heads, self.hd, self.layer = heads, kv_heads, d // heads, layer
        self.input_layernorm = RMSNorm(d)
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.post_attention_layernorm = RMSNorm(d)
        self.gate_proj = nn.Linear(d, inter, bias=False)
        self.up_proj = nn.Linear(d, inter, bias=False)
        self.down_proj = nn.Linear(inter, d, bias=False)

    def forward(self, x, cos, sin, cache):
        b, t, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache is not None:
            k, v = cache.update(self.layer, k, v)
        x = x + self.o_proj(attend(q, k, v, True))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class Llama(nn.Module):
    def __init__(self, vocab, d=384, inter=1024, layers=6, heads=6, kv_heads=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(LlamaLayer(d, inter, heads, kv_heads, i) for i in range(layers))
        self.norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        hd = d // heads
        self.inv_freq = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        self.cache_shape = (layers, kv_heads, hd)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, 0, 0.02)

    def forward(self, ids, cache=None, last_only=False):
        start = cache.length if cache is not None else 0
        t = ids.shape[1]
        angles = torch.arange(start, start + t).float()[:, None] * self.inv_freq[None]
        emb = torch.cat((angles, angles), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x, cos, sin, cache)
        x = self.norm(x)
        if last_only:
            x = x[:, -1:]
        if cache is not None:
            cache.length += t
        return self.lm_head(x)


LORA_TARGETS = {
    "gpt2": ["c_attn", "c_proj", "c_fc"],
    "llama": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
}


def build(name, vocab, positions):
    torch.manual_seed(0)
    return GPT2(vocab, positions) if name == "gpt2" else Llama(vocab)


def apply_lora(model, name):
    """Adapters on the bench's targets (GPT-2's mlp c_proj is mlp_proj here), everything else frozen."""
    targets = set(LORA_TARGETS[name]) | ({"mlp_proj"} if name == "gpt2" else set())
    for p in model.parameters():
        p.requires_grad_(False)
    for module in list(model.modules()):
        for child_name, child in list(module.named_children()):
            if child_name in targets and isinstance(child, nn.Linear):
                setattr(module, child_name, LoraLinear(child))
    return [p for p in model.parameters() if p.requires_grad]


class Trainer:
    """A model, its AdamW over `params` and one fixed batch: each round times `steps` steps."""

    def __init__(self, model, params, a):
        g = torch.Generator().manual_seed(1)
        self.model, self.vocab = model, a.vocab
        self.x = torch.randint(0, a.vocab, (a.batch, a.context + 1), generator=g)
        self.opt = torch.optim.AdamW(params, lr=1e-4)
        self.tokens = a.batch * a.context
        self.step()  # two warm-up steps, as bench/lm.ts takes
        self.step()

    def step(self):
        self.model.train()
        x = self.x
        loss = F.cross_entropy(self.model(x[:, :-1]).reshape(-1, self.vocab), x[:, 1:].reshape(-1))
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()

    def rate(self, steps):
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            self.step()
            times.append(time.perf_counter() - t0)
        return self.tokens / statistics.median(times)


@torch.inference_mode()
def generate(model, prompt, new_tokens):
    b, t = prompt.shape
    layers, kv_heads, hd = model.cache_shape
    cache = Cache(layers, b, kv_heads, hd, t + new_tokens)
    ids = prompt
    out = []
    for _ in range(new_tokens):
        logits = model(ids, cache, last_only=True)
        ids = logits[:, -1].argmax(-1, keepdim=True)
        out.append(ids)
    return torch.cat(out, 1)


def prompts(rows, a):
    return torch.tensor([[(r * 31 + i * 7) % a.vocab for i in range(a.prompt)] for r in range(rows)])


def generate_rate(model, rows, a):
    model.eval()
    prompt = prompts(rows, a)
    t0 = time.perf_counter()
    generate(model, prompt, a.new_tokens)
    return rows * a.new_tokens / (time.perf_counter() - t0)


class Models:
    """Each model once per name: the base one (full training, generation) and an adapted one (LoRA)."""

    def __init__(self, a):
        self.a, self.base, self.lora, self.trainers, self.warm = a, {}, {}, {}, set()
        self.positions = max(512, a.prompt + a.new_tokens, a.context)

    def figure(self, req):
        name, a = req["model"], self.a
        torch.set_num_threads(int(req["threads"]))
        if name not in self.base:
            self.base[name] = build(name, a.vocab, self.positions)
        if req["what"] == "generate":
            model, rows = self.base[name], int(req["batch"])
            if (name, rows) not in self.warm:
                self.warm.add((name, rows))
                model.eval()
                generate(model, prompts(rows, a), 8)
            return generate_rate(model, rows, a)
        key = (name, req["mode"])
        if key not in self.trainers:
            if req["mode"] == "lora":
                model = build(name, a.vocab, self.positions)
                self.trainers[key] = Trainer(model, apply_lora(model, name), a)
            else:
                self.trainers[key] = Trainer(self.base[name], list(self.base[name].parameters()), a)
        return self.trainers[key].rate(a.steps)


def settings():
    return {"torch": torch.__version__, "removed_env": REMOVED, "mkldnn": torch.backends.mkldnn.is_available()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", default="gpt2,llama")
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--context", type=int, default=128)
    ap.add_argument("--prompt", type=int, default=16)
    ap.add_argument("--new-tokens", type=int, default=128)
    a = ap.parse_args()
    models = Models(a)
    if a.serve:
        print(json.dumps({"ready": True, **settings()}), flush=True)
        for line in sys.stdin:
            print(json.dumps({"tokens_per_s": round(models.figure(json.loads(line)), 1)}), flush=True)
        return
    for threads in [int(t) for t in a.threads.split(",")]:
        for name in a.models.split(","):
            common = {"bench": "lm", "framework": "pytorch", "threads": threads, "model": name, **settings()}
            for fig in ({"what": "train", "mode": "full"}, {"what": "generate", "batch": 1}, {"what": "generate", "batch": a.batch},
                        {"what": "train", "mode": "lora"}):
                rate = models.figure({"model": name, "threads": threads, **fig})
                print(json.dumps({**common, **fig, "tokens_per_s": round(rate, 1)}), flush=True)


if __name__ == "__main__":
    main()
