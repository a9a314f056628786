"""A two-layer graph convolutional network (Kipf & Welling) on a small synthetic graph, written the way GCN
examples do it: a normalized sparse adjacency D^-1/2 (A + I) D^-1/2 built with torch.sparse_coo_tensor, and
each layer as torch.sparse.mm(adj, x @ W); node classification trained with a mask, evaluated on held-out nodes."""
import rawdev as torch
import rawdev.nn as nn
import rawdev.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"
print(f"Using {device} device")

torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
n_nodes, n_classes, n_feats = 60, 3, 8
labels = torch.arange(n_nodes) % n_classes
# a stochastic block model: edges mostly inside a class
src, dst = [], []
probs = torch.rand(n_nodes, n_nodes, generator=g)
for i in range(n_nodes):
    for j in range(i + 1, n_nodes):
        p = 0.25 if labels[i] == labels[j] else 0.01
        if probs[i, j].item() < p:
            src += [i, j]
            dst += [j, i]
features = torch.randn(n_nodes, n_feats, generator=g) + 0.6 * F.one_hot(labels, n_feats).float()


def normalized_adjacency(src, dst, n):
    loops = list(range(n))
    index = torch.tensor([src + loops, dst + loops])
    values = torch.ones(index.shape[1])
    adj = torch.sparse_coo_tensor(index, values, (n, n)).coalesce()
    deg = torch.sparse.sum(adj, dim=1).to_dense()
    d_inv_sqrt = deg.pow(-0.5)
    i, j = adj.indices()
    return torch.sparse_coo_tensor(adj.indices(), d_inv_sqrt[i] * adj.values() * d_inv_sqrt[j], (n, n))


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, out_features))
        self.bias = nn.Parameter(torch.zeros(out_features))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, x, adj):
        support = torch.mm(x, self.weight)
        return torch.sparse.mm(adj, support) + self.bias


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout=0.5):
        super().__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        return F.log_softmax(self.gc2(x, adj), dim=1)


adj = normalized_adjacency(src, dst, n_nodes).to(device)
print(f"adjacency: {adj._nnz()} nonzeros, is_sparse={adj.is_sparse}")
x, y = features.to(device), labels.to(device)
idx_train = torch.arange(0, 30, device=device)
idx_test = torch.arange(30, n_nodes, device=device)

model = GCN(n_feats, 16, n_classes).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
losses = []
for epoch in range(60):
    model.train()
    optimizer.zero_grad()
    output = model(x, adj)
    loss = F.nll_loss(output[idx_train], y[idx_train])
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

model.eval()
with torch.no_grad():
    pred = model(x, adj).argmax(1)
    test_acc = (pred[idx_test] == y[idx_test]).float().mean().item()
print(f"RESULT first_loss={losses[0]:.4f} last_loss={losses[-1]:.4f} test_acc={test_acc:.4f}")
