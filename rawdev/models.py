"""The demo's model zoo, written here: an MLP and a small CNN with BatchNorm for the bundled digits, and a
character-level GPT for a small generated text. Each is an ordinary nn.Module built from rawdev's layers,
so `model.cuda()` moves its parameters and its buffers (BatchNorm's running statistics) alike."""
import math

import numpy as np

from . import nn
from .nn import functional as F
from .random import manual_seed

__all__ = ["mlp", "SmallCNN", "CharGPT", "digits_images", "make_text", "CharData"]


def mlp(hidden=128, layers=1, seed=0, inputs=64, classes=10):
    """MLP inputs -> hidden (-> hidden)* -> classes with ReLUs; `layers` hidden layers."""
    manual_seed(seed)
    mods, width = [], inputs
    for _ in range(layers):
        mods += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    return nn.Sequential(*mods, nn.Linear(width, classes))


class SmallCNN(nn.Module):
    """Two conv-BatchNorm-ReLU-maxpool stages and a linear classifier, for 1x16x16 images."""

    def __init__(self, channels=(8, 16), classes=10, size=16, seed=0):
        manual_seed(seed)
        super().__init__()
        c1, c2 = channels
        self.features = nn.Sequential(
            nn.Conv2d(1, c1, 3, padding=1), nn.BatchNorm2d(c1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(c1, c2, 3, padding=1), nn.BatchNorm2d(c2), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(c2 * (size // 4) ** 2, classes)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def digits_images(X, size=16):
    """Digits rows of 64 pixels -> (N, 1, size, size) images, upsampled by pixel repetition."""
    k = size // 8
    img = X.reshape(-1, 1, 8, 8)
    return np.ascontiguousarray(img.repeat(k, axis=2).repeat(k, axis=3)).astype(np.float32)


# ------------------------------------------------------------------------------------------ char GPT
class _Block(nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d), nn.Dropout(dropout))
        self.heads, self.dropout = heads, dropout

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.ln2(x))


class CharGPT(nn.Module):
    """A character-level GPT: token and position embeddings, pre-norm blocks with causal attention and a
    GELU MLP, a final LayerNorm and a linear head."""

    def __init__(self, vocab, block=32, d=48, heads=4, layers=2, dropout=0.0, seed=0):
        manual_seed(seed)
        super().__init__()
        self.block = block
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.blocks = nn.Sequential(*[_Block(d, heads, dropout) for _ in range(layers)])
        self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)
        for name, p in self.named_parameters():
            if name.endswith("proj.weight"):   # GPT-2's scaled init of the residual projections
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * layers))

    def forward(self, idx, targets=None):
        from .tensor.factory import arange
        B, T = idx.shape
        x = self.tok(idx) + self.pos(arange(T, device=idx.device))
        logits = self.head(self.ln_f(self.blocks(x)))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))


_SUBJECTS = ["the cat", "a dog", "the bird", "my friend", "the old man", "a child"]
_VERBS = ["sees", "likes", "finds", "follows", "draws", "hears"]
_OBJECTS = ["the moon", "a red ball", "the river", "a small house", "the green tree", "a song"]


def make_text(sentences=600, seed=0):
    """A small generated text: sentences of a tiny grammar, so a model can learn real structure."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(sentences):
        s = f"{_SUBJECTS[rng.integers(6)]} {_VERBS[rng.integers(6)]} {_OBJECTS[rng.integers(6)]}"
        out.append(s + (". " if rng.random() < 0.8 else "! "))
    return "".join(out)


class CharData:
    """The text as token ids, a 90/10 train/validation split and random (B, T) batches."""

    def __init__(self, text, block=32, seed=0):
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        data = np.array([self.stoi[c] for c in text], dtype=np.int64)
        n = int(0.9 * len(data))
        self.train, self.val, self.block = data[:n], data[n:], block
        self.rng = np.random.default_rng(seed)

    @property
    def vocab(self):
        return len(self.chars)

    def batch(self, split, batch_size):
        data = self.train if split == "train" else self.val
        ix = self.rng.integers(0, len(data) - self.block - 1, batch_size)
        x = np.stack([data[i:i + self.block] for i in ix])
        y = np.stack([data[i + 1:i + self.block + 1] for i in ix])
        return x, y

    def decode(self, ids):
        return "".join(self.chars[int(i)] for i in ids)
