"""A GRU over variable-length sequences the way PyTorch programs batch them: pad_sequence, then
pack_padded_sequence(enforce_sorted=False) into a bidirectional GRU, pad_packed_sequence back, a per-step
Linear for sequence labelling (is this token bigger than every token before it?), and a masked loss.
The data is generated here."""
import rawdev as torch
import rawdev.nn as nn
from rawdev.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def make_batch(b):
    lengths = torch.randint(2, 9, (b,))
    seqs = [torch.randint(1, 10, (int(n),)) for n in lengths]
    labels = [torch.tensor([int(s[i] > s[:i].max()) if i else 1 for i in range(len(s))]) for s in seqs]
    return pad_sequence(seqs, batch_first=True), pad_sequence(labels, batch_first=True, padding_value=-100), lengths


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 8, padding_idx=0)
        self.gru = nn.GRU(8, 16, batch_first=True, bidirectional=True)
        self.out = nn.Linear(32, 2)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embed(tokens), lengths.cpu(), batch_first=True, enforce_sorted=False)
        output, _ = self.gru(packed)
        padded, _ = pad_packed_sequence(output, batch_first=True, total_length=tokens.size(1))
        return self.out(padded)


model = Tagger().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
criterion = nn.CrossEntropyLoss(ignore_index=-100)
losses = []
for step in range(40):
    tokens, labels, lengths = make_batch(16)
    tokens, labels = tokens.to(device), labels.to(device)
    logits = model(tokens, lengths)
    loss = criterion(logits.reshape(-1, 2), labels.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
    if step % 10 == 0:
        print(f"step {step}: loss {loss.item():.4f}")
first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
print(f"RESULT first_loss={first:.4f} last_loss={last:.4f}")
