"""PyTorch anchor for examples/gpt_mini.ts and bench/gpt_mini.ts: the same character model
(nn.TransformerEncoderLayer, pre-norm, GELU, with a causal mask), the same corpus (Debian's
`fortunes`), tokenizer, batch order, initialisation scheme and recipe (AdamW 0.9/0.95, weight decay
0.1 on matrices, linear warm-up then cosine decay, clipping at 1) on the CPU with 2 threads.
Prints the same last JSON line as the example.

    /usr/bin/python3 bench/anchors/torch_gpt_mini.py --steps 200 [--batch 32] [--lr 1e-3] [--seed 0]
"""
import argparse
import json
import math
import os
import re
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

DIR = os.environ.get("FLOCKML_FORTUNES_DIR", "/usr/share/games/fortunes")
CONTEXT = 128


def corpus():
    """As fl.data.fortunesCorpus: every cookie file sorted by name, '%' lines made blank lines."""
    if not os.path.isdir(DIR):
        raise SystemExit(f"no fortunes at {DIR}: install Debian's package `fortunes` (apt-get install fortunes)")
    names = sorted(f for f in os.listdir(DIR) if os.path.isfile(os.path.join(DIR, f)) and "." not in f)
    text = "%\n".join(open(os.path.join(DIR, f), encoding="utf-8").read() for f in names)
    parts = [p.rstrip() for p in re.split(r"^%\n", text, flags=re.M)]
    return "\n\n".join(p for p in parts if p)


class GptMini(nn.Module):
    def __init__(self, vocab, d=128, heads=4, layers=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(CONTEXT, d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu", batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif re.search(r"norm\d?\.weight$|ln_f\.weight$", name):
                nn.init.ones_(p)
            else:
                nn.init.normal_(p, 0, 0.02)
        self.register_buffer("mask", torch.triu(torch.full((CONTEXT, CONTEXT), float("-inf")), diagonal=1), persistent=False)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.tok(ids) + self.pos(torch.arange(t))
        return self.head(self.ln_f(self.blocks(x, mask=self.mask[:t, :t])))


def batch_starts(step, batch, rng):
    return [((step * batch + r) * 2654435761) % rng for r in range(batch)]


def windows(tokens, starts):
    idx = torch.tensor(starts).unsqueeze(1) + torch.arange(CONTEXT + 1)
    w = tokens[idx]
    return w[:, :-1], w[:, 1:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-batches", type=int, default=8)
    a = ap.parse_args()
    torch.set_num_threads(2)
    text = corpus()
    chars = sorted(set(text))
    ids = {c: i for i, c in enumerate(chars)}
    tokens = torch.tensor([ids[c] for c in text], dtype=torch.long)
    split = int(len(tokens) * 0.9)
    train, val = tokens[:split], tokens[split:]
    torch.manual_seed(a.seed)
    model = GptMini(len(chars))
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95))
    warmup = max(1, min(100, a.steps // 10))
    sched = torch.optim.lr_scheduler.ChainedScheduler([
        torch.optim.lr_scheduler.LinearLR(opt, start_factor=1 / warmup, end_factor=1.0, total_iters=warmup),
        torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, a.steps), eta_min=a.lr / 10),
    ])
    model.train()
    start = time.perf_counter()
    for s in range(a.steps):
        x, y = windows(train, batch_starts(s, a.batch, len(train) - CONTEXT - 1))
        loss = F.cross_entropy(model(x).reshape(-1, len(chars)), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    seconds = time.perf_counter() - start
    model.eval()
    rng = len(val) - CONTEXT - 1
    total = 0.0
    with torch.no_grad():
        for b in range(a.eval_batches):
            starts = [((b * a.batch + r) * rng) // (a.eval_batches * a.batch) for r in range(a.batch)]
            x, y = windows(val, starts)
            total += F.cross_entropy(model(x).reshape(-1, len(chars)), y.reshape(-1)).item()
    print(json.dumps({"example": "gpt-mini", "framework": "pytorch", "steps": a.steps, "val_loss": round(total / a.eval_batches, 4),
                      "tokens_per_s": round(a.steps * a.batch * CONTEXT / seconds)}))


if __name__ == "__main__":
    main()
