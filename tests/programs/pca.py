"""Principal component analysis as course notes write it: center the data, take torch.linalg.svd, read the
explained variance from the singular values, project and reconstruct; then the same with torch.pca_lowrank.
The data is generated here: 400 points near a 3-dimensional subspace of a 12-dimensional space."""
import rawdev as torch

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

basis = torch.linalg.qr(torch.randn(12, 3)).Q
codes = torch.randn(400, 3) * torch.tensor([5.0, 3.0, 2.0])
X = (codes @ basis.T + 0.05 * torch.randn(400, 12)).to(device)

Xc = X - X.mean(dim=0, keepdim=True)
U, S, Vh = torch.linalg.svd(Xc, full_matrices=False)
explained = (S ** 2) / (S ** 2).sum()
print("explained variance ratio:", [round(v, 4) for v in explained[:4].tolist()])
Z = Xc @ Vh[:3].T                       # the 3 principal coordinates
X_hat = Z @ Vh[:3] + X.mean(dim=0, keepdim=True)
err = ((X - X_hat) ** 2).mean().sqrt().item()
print(f"reconstruction RMS error with 3 components: {err:.4f}")

U2, S2, V2 = torch.pca_lowrank(X, q=3)
agree = (S2 - S[:3]).abs().max().item() / S[0].item()
# the same subspace: the projections of V2's directions onto the exact ones have norm 1
overlap = torch.linalg.matrix_norm(Vh[:3] @ V2, "fro").item() ** 2 / 3
print(f"pca_lowrank: singular values agree to {agree:.2e}, subspace overlap {overlap:.4f}")
print(f"RESULT top3={explained[:3].sum().item():.4f} err={err:.4f} agree={agree:.6f} overlap={overlap:.6f}")
