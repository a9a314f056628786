"""`rawdev demo`: train a model on the GPU — or on rawdev's simulated GPU when there is none — and show what
happens underneath: the driver calls of the `model.cuda()` move, a progress bar per epoch, the result and
the device memory, block by block. Models (rawdev.models): `mlp` (default) and `cnn` (conv, BatchNorm,
max-pool) on the UCI digits (8x8 images, 1,797 samples; 16x16 for the CNN), `gpt` (a character-level GPT)
on a small generated text."""
import sys
import time

import numpy as np


def add_parser(subparsers):
    p = subparsers.add_parser("demo", help="train an MLP, a CNN or a char-GPT (GPU, or the simulated GPU)",
                              description=__doc__)
    p.add_argument("--model", choices=["mlp", "cnn", "gpt"], default="mlp",
                   help="mlp (default) or cnn on the digits, gpt on a generated text")
    p.add_argument("--epochs", type=int, default=None, help="passes over the training set (default 8; cnn 3)")
    p.add_argument("--steps", type=int, default=300, help="gpt: training steps (default 300)")
    p.add_argument("--batch-size", type=int, default=None, help="batch size (default 128; cnn 64; gpt 16)")
    p.add_argument("--lr", type=float, default=None, help="learning rate (default 0.01, Adam; gpt 3e-3, AdamW)")
    p.add_argument("--hidden", type=int, default=128, help="hidden layer width (default 128)")
    p.add_argument("--layers", type=int, default=1, help="hidden layers (default 1)")
    p.add_argument("--optimizer", choices=["adam", "sgd"], default="adam",
                   help="adam (default) or sgd (momentum 0.9)")
    p.add_argument("--device", default="auto",
                   help="auto (default: the GPU if there is one, else the simulator), cuda, sim, or cpu")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--save", metavar="PATH", help="save the trained weights (safetensors) to PATH")
    p.add_argument("--quiet-trace", action="store_true", help="do not print the driver calls of the move")
    p.set_defaults(fn=run)
    return p


def choose_device(name):
    """'auto' | 'cuda' | 'sim' | 'cpu' -> rawdev.device, switching to the simulator (with a notice) if needed."""
    import rawdev
    from rawdev.driver_choice import choose_driver
    if name == "cpu":
        return rawdev.device("cpu")
    choose_driver(name, "rawdev demo", "No CUDA GPU found: running on rawdev's simulated GPU (it executes the same "
                                       "PTX kernels; slower than a GPU, same results).", sys.stdout)
    return rawdev.device("cuda")


def split_digits(seed=0, test_fraction=0.2):
    """Normalized digits, fixed shuffled split: (Xtr, ytr, Xte, yte) as numpy arrays."""
    from rawdev.data import load_digits
    X, y = load_digits()
    X = X / np.float32(16.0)
    perm = np.random.default_rng(seed).permutation(len(X))
    n_test = int(round(len(X) * test_fraction))
    te, tr = perm[:n_test], perm[n_test:]
    return (np.ascontiguousarray(X[tr]), np.ascontiguousarray(y[tr]), np.ascontiguousarray(X[te]),
            np.ascontiguousarray(y[te]))


def build_model(hidden=128, seed=0, layers=1):
    """MLP 64 -> hidden (-> hidden)* -> 10 with ReLUs; `layers` hidden layers."""
    from rawdev.models import mlp
    return mlp(hidden, layers, seed)


def _bar(done, total, width=24):
    n = int(width * done / max(total, 1))
    return "#" * n + "-" * (width - n)


def memory_report(dev):
    """rawdev.cuda.memory_summary() when the memory tool is there; else the allocation table, by owner."""
    import rawdev
    if dev.type != "cuda":
        return "(cpu: no device memory)"
    fn = getattr(rawdev.cuda, "memory_summary", None)
    if fn is not None:
        return fn()
    from rawdev.runtime import get_device
    from rawdev.runtime.trace import fmt_bytes
    alloc = get_device(dev.index or 0).allocator
    alloc.flush()
    lines = [f"device memory on {dev}: {fmt_bytes(alloc.stats['allocated'])} in {len(alloc.live)} blocks, "
             f"peak {fmt_bytes(alloc.stats['peak'])}"]
    for b in sorted(alloc.live.values(), key=lambda b: -b.nbytes):
        lines.append(f"  0x{b.ptr:x}  {fmt_bytes(b.nbytes):>10}  {b.owner or 'unnamed'}")
        for off, n, who in b.parts:
            lines.append(f"      +{off:<8d}{fmt_bytes(n):>10}  {who}")
    return "\n".join(lines)


def run(args):
    import rawdev
    from rawdev import nn, optim
    from rawdev.runtime import seam
    from rawdev.utils.data import DeviceLoader

    t_start = time.perf_counter()
    device = choose_device(args.device)
    if device.type == "cuda":
        from rawdev.runtime import get_device
        d = get_device(0)
        kind = "rawdev's simulated GPU" if seam.driver_name() == "sim" else "NVIDIA driver"
        print(f"driver: {seam.driver_name()} ({kind})  device: cuda:{d.index}, {d.name} "
              f"(sm_{d.capability[0]}{d.capability[1]})")
    else:
        print("driver: none  device: cpu (numpy)")

    if args.model == "gpt":
        return run_gpt(args, device, t_start)
    defaults = {"mlp": (8, 128, 0.01), "cnn": (3, 64, 0.01)}[args.model]
    args.epochs = args.epochs or defaults[0]
    args.batch_size = args.batch_size or defaults[1]
    args.lr = args.lr or defaults[2]
    Xtr, ytr, Xte, yte = split_digits(args.seed)
    if args.model == "cnn":
        from rawdev.models import SmallCNN, digits_images
        Xtr, Xte = digits_images(Xtr), digits_images(Xte)
        print(f"data: UCI optdigits, {len(Xtr)} training and {len(Xte)} test images upsampled to 16x16, 10 classes")
        model = SmallCNN(seed=args.seed)
    else:
        print(f"data: UCI optdigits, {len(Xtr)} training and {len(Xte)} test images of 8x8 pixels, 10 classes")
        model = build_model(args.hidden, args.seed, args.layers)
    nn.layers.tag_modules(model)      # device memory of each layer is named after it ("Linear 0 ...")
    print(model)

    with rawdev.trace() as t:
        model.to(device)
    if device.type == "cuda" and not args.quiet_trace:
        print(f"\nmodel.to({str(device)!r}) — the driver calls:")
        print(t)

    if args.optimizer == "adam":
        opt = optim.Adam(model.parameters(), lr=args.lr)
    else:
        opt = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    loader = DeviceLoader(Xtr, ytr, batch_size=args.batch_size, shuffle=True, generator=rawdev.Generator(args.seed),
                          device=device)
    tty = sys.stdout.isatty()
    print()
    for epoch in range(1, args.epochs + 1):
        model.train()
        t0 = time.perf_counter()
        total, n = 0.0, 0
        steps = len(loader)
        for i, (x, y) in enumerate(loader, 1):
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item() * y.shape[0]
            n += y.shape[0]
            if tty:
                print(f"\repoch {epoch:>2}/{args.epochs} [{_bar(i, steps)}] {i}/{steps}  loss {total / n:.4f}",
                      end="", flush=True)
        line = (f"epoch {epoch:>2}/{args.epochs} [{_bar(steps, steps)}] {steps}/{steps}  loss {total / n:.4f}  "
                f"{time.perf_counter() - t0:.1f} s")
        print(("\r" + line) if tty else line, flush=True)

    acc = evaluate(model, Xte, yte, device)
    print(f"\ntest accuracy: {acc * 100:.2f}% ({int(round(acc * len(yte)))}/{len(yte)})")
    if args.save:
        rawdev.save(model.state_dict(), args.save)
        print(f"saved the weights to {args.save}")
    print()
    print(memory_report(device))
    print(f"\ntotal time: {time.perf_counter() - t_start:.1f} s")
    return 0


def run_gpt(args, device, t_start):
    """Train the char-GPT on the generated text; report validation loss before and after, and a sample."""
    import rawdev
    from rawdev import optim
    from rawdev.models import CharData, CharGPT, make_text
    steps, bs, lr = args.steps, args.batch_size or 16, args.lr or 3e-3
    data = CharData(make_text(seed=args.seed), block=32, seed=args.seed)
    print(f"data: a generated text of {len(data.train) + len(data.val)} characters ({data.vocab} distinct), "
          f"90/10 split, blocks of {data.block}")
    model = CharGPT(data.vocab, block=data.block, seed=args.seed)
    print(model)
    print(f"{sum(p.numel() for p in model.parameters())} parameters")
    with rawdev.trace() as t:
        model.to(device)
    if device.type == "cuda" and not args.quiet_trace:
        print(f"\nmodel.to({str(device)!r}) — the driver calls:")
        print(t)
    opt = optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)

    def val_loss(batches=4):
        model.eval()
        with rawdev.no_grad():
            losses = []
            for _ in range(batches):
                x, y = data.batch("val", bs)
                losses.append(model(rawdev.tensor(x).to(device), rawdev.tensor(y).to(device))[1].item())
        model.train()
        return float(np.mean(losses))

    first = val_loss()
    print(f"\nvalidation loss before training: {first:.4f} (uniform guessing: {np.log(data.vocab):.4f})")
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        x, y = data.batch("train", bs)
        _, loss = model(rawdev.tensor(x).to(device), rawdev.tensor(y).to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % max(1, steps // 10) == 0 or step == steps:
            print(f"step {step:>4}/{steps}  train loss {loss.item():.4f}  {time.perf_counter() - t0:.1f} s", flush=True)
    last = val_loss()
    print(f"\nvalidation loss after {steps} steps: {last:.4f} (before: {first:.4f})")
    model.eval()
    idx = rawdev.tensor([[data.stoi["t"]]]).to(device)
    with rawdev.no_grad():
        for _ in range(60):
            logits, _ = model(idx[:, -data.block:])
            probs = rawdev.softmax(logits[:, -1, :], dim=-1)
            idx = rawdev.cat([idx, rawdev.multinomial(probs, 1)], dim=1)
    print("sample:", data.decode(idx[0].cpu().tolist()))
    if args.save:
        rawdev.save(model.state_dict(), args.save)
        print(f"saved the weights to {args.save}")
    print()
    print(memory_report(device))
    print(f"\ntotal time: {time.perf_counter() - t_start:.1f} s")
    return 0


def evaluate(model, X, y, device):
    import rawdev
    model.eval()
    with rawdev.no_grad():
        logits = model(rawdev.tensor(X).to(device)).cpu()
    pred = np.asarray(logits).argmax(1)
    return float((pred == y).mean())
