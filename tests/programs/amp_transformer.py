"""The AMP recipe on a small transformer block: torch.autocast(dtype=torch.bfloat16) for the forward pass and a
GradScaler around backward and step (and a float16 run, where the scaler matters), each from the same initial
weights as a float32 run of the same steps; the mixed-precision losses must track the float32 ones."""
import copy

import rawdev as torch
from rawdev import nn

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"
print(f"Using {device} device")

VOCAB, D, SEQ, BATCH, STEPS = 16, 32, 8, 8, 12


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.block = nn.TransformerEncoderLayer(D, nhead=2, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, idx):
        return self.head(self.block(self.emb(idx)))


g = torch.Generator().manual_seed(1)
starts = torch.randint(0, VOCAB, (STEPS, BATCH, 1), generator=g)
data = (starts + 3 * torch.arange(SEQ + 1)) % VOCAB       # sequences that step by 3: learnable next tokens
base = TinyLM()


def train(amp_dtype):
    model = copy.deepcopy(base).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scaler = torch.amp.GradScaler(device, enabled=amp_dtype is not None)
    losses = []
    for step in range(STEPS):
        batch = data[step].to(device)
        x, y = batch[:, :-1], batch[:, 1:]
        opt.zero_grad()
        with torch.autocast(device_type=device, dtype=amp_dtype or torch.bfloat16, enabled=amp_dtype is not None):
            logits = model(x)
            loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        assert loss.dtype == torch.float32
        if amp_dtype is not None:
            assert logits.dtype == amp_dtype
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    return losses, scaler.get_scale()


f32, _ = train(None)
bf16, bf16_scale = train(torch.bfloat16)
f16, f16_scale = train(torch.float16)
print("float32 ", " ".join(f"{v:.4f}" for v in f32))
print("bfloat16", " ".join(f"{v:.4f}" for v in bf16))
print("float16 ", " ".join(f"{v:.4f}" for v in f16), f"scale {f16_scale}")
gap_bf16 = max(abs(a - b) / a for a, b in zip(f32, bf16))
gap_f16 = max(abs(a - b) / a for a, b in zip(f32, f16))
print(f"RESULT first_loss={f32[0]:.4f} last_loss={f32[-1]:.4f} bf16_last={bf16[-1]:.4f} f16_last={f16[-1]:.4f} "
      f"gap_bf16={gap_bf16:.4f} gap_f16={gap_f16:.4f} f16_scale={f16_scale}")
