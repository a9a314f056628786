"""An MNIST-style CNN script: argparse, a Net with conv/dropout/pooling, Adadelta, StepLR, DataLoader
workers and pin_memory on the GPU, train/test functions, optional --save-model."""
import argparse

import rawdev as torch
import rawdev.nn as nn
import rawdev.nn.functional as F
import rawdev.optim as optim
from rawdev.optim.lr_scheduler import StepLR
from rawdev.utils.data import Dataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(256, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


class Digits(Dataset):
    """12x12 single-channel 'digits': a class template plus noise, normalized like MNIST's transform."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        templates = torch.rand(10, 1, 12, 12, generator=torch.Generator().manual_seed(7))
        self.targets = torch.randint(0, 10, (n,), generator=g)
        self.data = templates[self.targets] + 0.3 * torch.rand(n, 1, 12, 12, generator=g)

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        return (self.data[index] - 0.1307) / 0.3081, int(self.targets[index])


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print("Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}".format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))
            if args.dry_run:
                break


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    print("\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n".format(
        test_loss, correct, len(test_loader.dataset), 100. * correct / len(test_loader.dataset)))
    return test_loss


def main():
    parser = argparse.ArgumentParser(description="PyTorch MNIST-style Example")
    parser.add_argument("--batch-size", type=int, default=32, metavar="N")
    parser.add_argument("--test-batch-size", type=int, default=64, metavar="N")
    parser.add_argument("--epochs", type=int, default=2, metavar="N")
    parser.add_argument("--lr", type=float, default=1.0, metavar="LR")
    parser.add_argument("--gamma", type=float, default=0.7, metavar="M")
    parser.add_argument("--no-accel", action="store_true")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--seed", type=int, default=1, metavar="S")
    parser.add_argument("--log-interval", type=int, default=2, metavar="N")
    parser.add_argument("--save-model", action="store_true")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    use_accel = not args.no_accel and torch.cuda.is_available()
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if use_accel else "cpu")

    train_kwargs = {"batch_size": args.batch_size}
    test_kwargs = {"batch_size": args.test_batch_size}
    if use_accel:
        accel_kwargs = {"num_workers": args.workers, "pin_memory": True, "shuffle": True}
        train_kwargs.update(accel_kwargs)
        test_kwargs.update(accel_kwargs)
    else:
        train_kwargs.update({"num_workers": args.workers, "shuffle": True})

    dataset1 = Digits(192, seed=1)
    dataset2 = Digits(64, seed=2)
    train_loader = torch.utils.data.DataLoader(dataset1, **train_kwargs)
    test_loader = torch.utils.data.DataLoader(dataset2, **test_kwargs)

    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    first = test(model, device, test_loader)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        last = test(model, device, test_loader)
        scheduler.step()

    if args.save_model:
        torch.save(model.state_dict(), "mnist_cnn.pt")
    print(f"RESULT first_loss={first:.4f} last_loss={last:.4f} lr={scheduler.get_last_lr()[0]:.4f}")


if __name__ == "__main__":
    main()
