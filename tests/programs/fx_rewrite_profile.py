"""torch.fx as its examples and tutorials use it, on a small residual CNN trained for a few steps on synthetic
images: symbolic_trace, print the graph; fold each BatchNorm into its convolution (Graph edits written out, as
the conv/bn fuser tutorial does, and experimental.optimization.fuse); swap a hand-written `x * sigmoid(x)` for
F.silu with replace_pattern; a Transformer turning every torch.add into an in-graph operator add; ShapeProp;
and a profiling Interpreter that times each node and prints a summary table."""
import copy
import operator
import statistics
import time

import rawdev as torch
import rawdev.fx as fx
import rawdev.nn as nn
import rawdev.nn.functional as F
from rawdev.fx.experimental.optimization import fuse
from rawdev.fx.passes.shape_prop import ShapeProp

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(f"Using device: {device}")


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        y = self.bn(self.conv(x))
        return torch.add(x, y * torch.sigmoid(y))      # a residual with a hand-written SiLU


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 6, 3, padding=1)
        self.bn0 = nn.BatchNorm2d(6)
        self.blocks = nn.Sequential(Block(6), Block(6))
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        x = F.relu(self.bn0(self.stem(x)))
        x = self.blocks(x)
        return self.fc(x.mean(dim=(2, 3)))


# synthetic 3-class images: a bright row, a bright column or a bright diagonal, plus noise
N = 64
labels = torch.randint(0, 3, (N,))
images = 0.3 * torch.randn(N, 1, 8, 8)
idx = torch.arange(8)
for i in range(N):
    k = int(labels[i])
    if k == 0:
        images[i, 0, 3, :] += 1.5
    elif k == 1:
        images[i, 0, :, 3] += 1.5
    else:
        images[i, 0, idx, idx] += 1.5
images, labels = images.to(device), labels.to(device)

model = Net().to(device)
opt = torch.optim.Adam(model.parameters(), lr=0.02)
losses = []
for step in range(20):
    opt.zero_grad()
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    opt.step()
    losses.append(loss.item())
print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")
model.eval()
with torch.no_grad():
    reference = model(images)

# ---- trace
traced = fx.symbolic_trace(model)
print(traced.graph)
n_nodes = len(traced.graph.nodes)


# ---- conv/bn folding written out with Graph edits (the tutorial's fuser)
def fold_conv_bn(m):
    gm = fx.symbolic_trace(copy.deepcopy(m))
    modules = dict(gm.named_modules())
    for node in gm.graph.nodes:
        if node.op != "call_module" or type(modules[node.target]) is not nn.BatchNorm2d:
            continue
        prev = node.args[0]
        if prev.op != "call_module" or type(modules[prev.target]) is not nn.Conv2d or len(prev.users) > 1:
            continue
        fused = nn.utils.fusion.fuse_conv_bn_eval(modules[prev.target], modules[node.target])
        parent, _, name = prev.target.rpartition(".")
        setattr(modules[parent], name, fused)
        node.replace_all_uses_with(prev)
        gm.graph.erase_node(node)
    gm.graph.lint()
    gm.recompile()
    return gm


folded = fold_conv_bn(model)
bn_left = sum(1 for n in folded.graph.nodes if n.op == "call_module" and "bn" in n.target)
with torch.no_grad():
    fuse_err = (folded(images) - reference).abs().max().item()
    fuse_err = max(fuse_err, (fuse(model)(images) - reference).abs().max().item())
print(f"folded {n_nodes - len(folded.graph.nodes)} batch norms, max difference {fuse_err:.2e}")
print(folded.code)


# ---- replace x * sigmoid(x) by F.silu
def pattern(y):
    return y * torch.sigmoid(y)


def replacement(y):
    return F.silu(y)


matches = fx.replace_pattern(folded, pattern, replacement)
print(f"replace_pattern: {len(matches)} SiLUs")


# ---- a Transformer: torch.add -> operator.add
class AddToOperator(fx.Transformer):
    def call_function(self, target, args, kwargs):
        if target == torch.add:
            target = operator.add
        return super().call_function(target, args, kwargs)


rewritten = AddToOperator(folded).transform()
with torch.no_grad():
    rewrite_err = (rewritten(images) - reference).abs().max().item()
adds = sum(1 for n in rewritten.graph.nodes if n.target is operator.add)

# ---- shapes
ShapeProp(rewritten).propagate(images[:4])
for node in rewritten.graph.nodes:
    if node.op == "call_module":
        print(f"  {node.name:12s} {tuple(node.meta['tensor_meta'].shape)}")


# ---- a profiling Interpreter (the fx profiling tutorial's)
class ProfilingInterpreter(fx.Interpreter):
    def __init__(self, mod):
        super().__init__(fx.symbolic_trace(mod))
        self.total_runtime_sec = []
        self.runtimes_sec = {}

    def run(self, *args):
        t0 = time.perf_counter()
        out = super().run(*args)
        self.total_runtime_sec.append(time.perf_counter() - t0)
        return out

    def run_node(self, n):
        t0 = time.perf_counter()
        out = super().run_node(n)
        self.runtimes_sec.setdefault(n, []).append(time.perf_counter() - t0)
        return out

    def summary(self):
        total = statistics.mean(self.total_runtime_sec)
        rows = sorted(((n.op, str(n), statistics.mean(t), statistics.mean(t) / total * 100)
                       for n, t in self.runtimes_sec.items()), key=lambda r: -r[2])
        lines = [f"{'Op type':14s} {'Op':12s} {'Average runtime (s)':>20s} {'Pct total runtime':>18s}"]
        lines += [f"{op:14s} {name:12s} {t:20.6f} {pct:18.2f}" for op, name, t, pct in rows]
        return "\n".join(lines)


interp = ProfilingInterpreter(model)
with torch.no_grad():
    for _ in range(2):
        prof_out = interp.run(images)
profile_err = (prof_out - reference).abs().max().item()
print(interp.summary())
profiled = len(interp.runtimes_sec)
print(f"RESULT first_loss={losses[0]:.6f} last_loss={losses[-1]:.6f} fuse_err={fuse_err:.3e} "
      f"rewrite_err={rewrite_err:.3e} profile_err={profile_err:.3e} bn_left={bn_left} silus={len(matches)} "
      f"adds={adds} profiled={profiled} nodes={n_nodes}")
