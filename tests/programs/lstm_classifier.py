"""An LSTM sequence classifier: Embedding -> LSTM(batch_first) -> Linear on the last hidden state, with
packed-free padding, gradient clipping and Adam; the task (does the sequence hold more 1s than 2s?) is
generated here."""
import rawdev as torch
import rawdev.nn as nn
from rawdev.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

vocab, seq_len, n = 5, 7, 192
X = torch.randint(0, vocab, (n, seq_len))
y = ((X == 1).sum(dim=1) > (X == 2).sum(dim=1)).long()
train_loader = DataLoader(TensorDataset(X[:160], y[:160]), batch_size=16, shuffle=True)
test_X, test_y = X[160:].to(device), y[160:].to(device)


class LSTMClassifier(nn.Module):
    def __init__(self, vocab_size, embed_dim, hidden_dim, num_classes):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim)
        self.lstm = nn.LSTM(embed_dim, hidden_dim, num_layers=1, batch_first=True)
        self.fc = nn.Linear(hidden_dim, num_classes)

    def forward(self, x):
        embedded = self.embedding(x)
        output, (hidden, cell) = self.lstm(embedded)
        return self.fc(hidden[-1])


model = LSTMClassifier(vocab, 8, 16, 2).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)

losses = []
for epoch in range(4):
    model.train()
    total = 0.0
    for xb, yb in train_loader:
        xb, yb = xb.to(device), yb.to(device)
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        total += loss.item() * xb.size(0)
    losses.append(total / len(train_loader.dataset))
    model.eval()
    with torch.no_grad():
        acc = (model(test_X).argmax(dim=1) == test_y).float().mean().item()
    print(f"epoch {epoch}: loss {losses[-1]:.4f} test acc {acc:.3f}")
print(f"RESULT first_loss={losses[0]:.4f} last_loss={losses[-1]:.4f}")
