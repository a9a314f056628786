"""A sequence-to-sequence model in the style of the classic seq2seq tutorials: an LSTM encoder, a one-step LSTM
decoder, and a Seq2Seq wrapper that writes each step's prediction into a preallocated `outputs` tensor
(`outputs[t] = output`: an indexed write of a tensor in the graph) with teacher forcing. It learns to reverse
short digit sequences generated here, then exports the decoder step to ONNX — when the onnx package is installed —
and checks the exported file in onnxruntime against the model. The surroundings are a real script's:
`import torch.onnx`, cudnn.benchmark, a typed constructor, a `range` index."""
import io
import random

import numpy as np
import rawdev as torch
import rawdev.backends.cudnn as cudnn
import rawdev.nn as nn
import rawdev.onnx

cudnn.benchmark = True
torch.manual_seed(0)
random.seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(f"Using device: {device}")

VOCAB, LEN, SOS = 6, 4, 0          # digits 1..5, 0 is the start token


def make_batch(n):
    src = torch.randint(1, VOCAB, (n, LEN))
    trg = torch.LongTensor(n, LEN + 1)
    trg[:, 0] = SOS
    trg[:, 1:] = src.flip(1)
    return src.t().contiguous().to(device), trg.t().contiguous().to(device)     # [len, batch]


class Encoder(nn.Module):
    def __init__(self, vocab, emb_dim, hid_dim):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb_dim)
        self.rnn = nn.LSTM(emb_dim, hid_dim)

    def forward(self, src):
        outputs, (hidden, cell) = self.rnn(self.embedding(src))
        return hidden, cell


class Decoder(nn.Module):
    def __init__(self, vocab, emb_dim, hid_dim, dropout):
        super().__init__()
        self.output_dim = vocab
        self.embedding = nn.Embedding(vocab, emb_dim)
        self.rnn = nn.LSTM(emb_dim, hid_dim)
        self.fc_out = nn.Linear(hid_dim, vocab)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, cell):
        input = input.unsqueeze(0)
        embedded = self.dropout(self.embedding(input))
        output, (hidden, cell) = self.rnn(embedded, (hidden, cell))
        prediction = self.fc_out(output.squeeze(0))
        return prediction, hidden, cell


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, src, trg, teacher_forcing_ratio=0.5):
        trg_len, batch_size = trg.shape
        outputs = torch.zeros(trg_len, batch_size, self.decoder.output_dim).to(trg.device)
        hidden, cell = self.encoder(src)
        input = trg[0, :]
        for t in range(1, trg_len):
            output, hidden, cell = self.decoder(input, hidden, cell)
            outputs[t] = output
            teacher_force = random.random() < teacher_forcing_ratio
            input = trg[t] if teacher_force else output.argmax(1)
        return outputs


HID = 24
model = Seq2Seq(Encoder(VOCAB, 12, HID), Decoder(VOCAB, 12, HID, 0.1)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.03)
criterion = nn.CrossEntropyLoss()

losses = []
model.train()
for step in range(40):
    src, trg = make_batch(16)
    optimizer.zero_grad()
    output = model(src, trg)
    loss = criterion(output[1:].view(-1, VOCAB), trg[1:].view(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    losses.append(loss.item())
    if step % 10 == 0:
        print(f"step {step:3d}  loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    src, trg = make_batch(32)
    out = model(src, trg, teacher_forcing_ratio=0.0)
    pred = out[1:].argmax(2)
    accuracy = (pred == trg[1:]).float().mean().item()
    first = out[range(1, LEN + 1), 0]          # the first sequence's steps, picked with a range index
    assert first.shape == (LEN, VOCAB)
print(f"teacher-free accuracy {accuracy:.3f}")

onnx_err = 0.0
try:
    import onnx  # noqa: F401
    have_onnx = True
except ImportError:
    have_onnx = False
if have_onnx:
    decoder = model.decoder
    token = torch.tensor([1, 2, 3], device=device)
    h0 = torch.zeros(1, 3, HID, device=device)
    c0 = torch.zeros(1, 3, HID, device=device)
    f = io.BytesIO()
    torch.onnx.export(decoder, (token, h0, c0), f, input_names=["token", "hidden", "cell"],
                      output_names=["prediction", "hidden_out", "cell_out"],
                      dynamic_axes={"token": {0: "batch"}, "hidden": {1: "batch"}, "cell": {1: "batch"},
                                    "prediction": {0: "batch"}, "hidden_out": {1: "batch"},
                                    "cell_out": {1: "batch"}})
    print(f"exported the decoder step: {len(f.getvalue())} bytes")
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    if ort is not None:
        sess = ort.InferenceSession(f.getvalue(), providers=["CPUExecutionProvider"])
        token = torch.tensor([4, 5, 3, 2, 1], device=device)
        h = torch.randn(1, 5, HID, device=device)
        c = torch.randn(1, 5, HID, device=device)
        with torch.no_grad():
            ref = decoder(token, h, c)
        got = sess.run(None, {"token": token.cpu().numpy(), "hidden": h.cpu().numpy(), "cell": c.cpu().numpy()})
        onnx_err = max(float(np.abs(g - r.cpu().numpy()).max()) for g, r in zip(got, ref))
        print(f"onnxruntime against the model: max abs difference {onnx_err:.2e}")

print(f"RESULT first_loss={losses[0]:.4f} last_loss={np.mean(losses[-5:]):.4f} accuracy={accuracy:.4f} "
      f"onnx_err={onnx_err:.3e}")
