"""A makemore-style character MLP: a vocabulary from a word list, (block_size)-character contexts, an
embedding table indexed by integer tensors, a tanh hidden layer, manual SGD on p.data, then sampling."""
import random

import rawdev as torch
import rawdev.nn.functional as F

# a word list generated here: syllables glued together
rng = random.Random(42)
syll = ["an", "el", "ia", "mo", "ra", "li", "sa", "ke", "no", "em", "ma", "ja", "de", "or", "yn"]
words = ["".join(rng.choice(syll) for _ in range(rng.randint(1, 3))) for _ in range(400)]
chars = sorted(list(set("".join(words))))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi["."] = 0
itos = {i: s for s, i in stoi.items()}
vocab_size = len(itos)
print(f"{len(words)} words, vocabulary of {vocab_size}")

block_size = 3
device = "cuda" if torch.cuda.is_available() else "cpu"


def build_dataset(words):
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + ".":
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]
    X = torch.tensor(X)
    Y = torch.tensor(Y)
    print(X.shape, Y.shape)
    return X.to(device), Y.to(device)


random.seed(42)
random.shuffle(words)
n1 = int(0.8 * len(words))
n2 = int(0.9 * len(words))
Xtr, Ytr = build_dataset(words[:n1])
Xdev, Ydev = build_dataset(words[n1:n2])
Xte, Yte = build_dataset(words[n2:])

n_embd, n_hidden = 10, 64
g = torch.Generator().manual_seed(2147483647)
C = torch.randn((vocab_size, n_embd), generator=g)
W1 = torch.randn((n_embd * block_size, n_hidden), generator=g) * (5 / 3) / ((n_embd * block_size) ** 0.5)
b1 = torch.randn(n_hidden, generator=g) * 0.01
W2 = torch.randn((n_hidden, vocab_size), generator=g) * 0.01
b2 = torch.randn(vocab_size, generator=g) * 0
parameters = [p.to(device) for p in [C, W1, b1, W2, b2]]
C, W1, b1, W2, b2 = parameters
print(sum(p.nelement() for p in parameters))
for p in parameters:
    p.requires_grad = True

lossi = []
max_steps = 60
for i in range(max_steps):
    ix = torch.randint(0, Xtr.shape[0], (32,), generator=g)
    Xb, Yb = Xtr[ix], Ytr[ix]
    emb = C[Xb]
    embcat = emb.view(emb.shape[0], -1)
    hpreact = embcat @ W1 + b1
    h = torch.tanh(hpreact)
    logits = h @ W2 + b2
    loss = F.cross_entropy(logits, Yb)
    for p in parameters:
        p.grad = None
    loss.backward()
    lr = 0.1 if i < 40 else 0.01
    for p in parameters:
        p.data += -lr * p.grad
    if i % 10 == 0:
        print(f"{i:7d}/{max_steps:7d}: {loss.item():.4f}")
    lossi.append(loss.log10().item())


@torch.no_grad()
def split_loss(split):
    x, y = {"train": (Xtr, Ytr), "val": (Xdev, Ydev), "test": (Xte, Yte)}[split]
    emb = C[x]
    embcat = emb.view(emb.shape[0], -1)
    h = torch.tanh(embcat @ W1 + b1)
    logits = h @ W2 + b2
    loss = F.cross_entropy(logits, y)
    print(split, loss.item())
    return loss.item()


first = 10 ** lossi[0]
val = split_loss("val")
split_loss("train")

g = torch.Generator().manual_seed(2147483647 + 10)
for _ in range(5):
    out = []
    context = [0] * block_size
    while True:
        emb = C[torch.tensor([context], device=device)]
        h = torch.tanh(emb.view(1, -1) @ W1 + b1)
        logits = h @ W2 + b2
        probs = F.softmax(logits, dim=1)
        ix = torch.multinomial(probs.cpu(), num_samples=1, generator=g).item()
        context = context[1:] + [ix]
        out.append(ix)
        if ix == 0 or len(out) > 20:
            break
    print("".join(itos[i] for i in out))
print(f"RESULT first_loss={first:.4f} val_loss={val:.4f}")
