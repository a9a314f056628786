"""`rawdev run` (and `python -m rawdev.distributed.run`): one process per rank with torchrun's environment; a rank
that fails ends the job with its status and last lines, and nothing it or the others started outlives the job."""
import os
import subprocess
import sys
import time
from pathlib import Path

from _dist_ranks import free_port, gone

ROOT = Path(__file__).resolve().parent.parent
GUARD_S = 120      # hang guard only; a job takes ~3 s

JOB = """
import os, subprocess, sys, time
import rawdev, rawdev.distributed as dist
dist.init_process_group("nccl", timeout=30)
t = rawdev.ones(2, device="cuda") * (dist.get_rank() + 1)
dist.all_reduce(t)
keys = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "RAWDEV_SIM_DEVICES")
print("rank", dist.get_rank(), "device", rawdev.cuda.current_device(), "sum", t.cpu().tolist(),
      "env", [os.environ[k] for k in keys], "args", sys.argv[1:], flush=True)
if "--crash" in sys.argv:
    if dist.get_rank() == 0:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open(sys.argv[-1], "w").write(f"{os.getpid()} {child.pid}")
        time.sleep(600)                   # stuck: the launcher must end it
    else:
        while not os.path.exists(sys.argv[-1]):
            time.sleep(0.05)
        print("rank 1 gives up", file=sys.stderr, flush=True)
        sys.exit(3)
dist.destroy_process_group()
"""


def launch(tmp_path, launcher, *args):
    script = tmp_path / "job.py"
    script.write_text(JOB)
    env = dict(os.environ, PYTHONPATH=str(ROOT), RAWDEV_DRIVER="sim")
    env.pop("RAWDEV_SIM_DEVICES", None)
    return subprocess.run([sys.executable, "-m", launcher, "run" if launcher == "rawdev.cli" else "--nproc-per-node",
                           *(("--nproc-per-node",) if launcher == "rawdev.cli" else ()), "2", "--master-port",
                           str(free_port()), str(script), *args], env=env, capture_output=True, text=True,
                          timeout=GUARD_S)


def test_each_rank_gets_torchruns_environment_and_its_own_device(tmp_path):
    res = launch(tmp_path, "rawdev.cli", "--lr", "0.1")
    assert res.returncode == 0, res.stderr
    for r in (0, 1):
        assert (f"rank {r} device {r} sum [3.0, 3.0] env ['{r}', '2', '{r}', '2', '127.0.0.1', '2'] "
                f"args ['--lr', '0.1']") in res.stdout, res.stdout + res.stderr


def test_python_m_rawdev_distributed_run(tmp_path):
    res = launch(tmp_path, "rawdev.distributed.run")
    assert res.returncode == 0 and "rank 1 device 1 sum [3.0, 3.0]" in res.stdout, res.stderr



def test_a_failing_rank_ends_the_job_with_its_status_and_no_orphans(tmp_path):
    pids = tmp_path / "pids"
    res = launch(tmp_path, "rawdev.cli", "--crash", str(pids))
    assert res.returncode == 3, res.stdout + res.stderr
    assert "rawdev run: rank 1 (local_rank 1, pid " in res.stderr and "failed with exit status 3" in res.stderr
    tail = res.stderr.split("Last lines of rank 1:\n")[1]
    assert "  rank 1 device 1" in tail and "  rank 1 gives up" in tail
    rank0, grandchild = map(int, pids.read_text().split())
    deadline = time.monotonic() + 10
    while not (gone(rank0) and gone(grandchild)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(rank0) and gone(grandchild)


def test_bad_sizes_are_refused():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-m", "rawdev.cli", "run", "--nproc-per-node", "0", "x.py"], env=env,
                         capture_output=True, text=True, timeout=GUARD_S)
    assert res.returncode == 2 and "need nproc >= 1" in res.stderr


def test_two_nodes_on_one_machine(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(JOB)
    env = dict(os.environ, PYTHONPATH=str(ROOT), RAWDEV_DRIVER="sim")
    port = str(free_port())
    nodes = [subprocess.Popen([sys.executable, "-m", "rawdev.cli", "run", "--nnodes", "2", "--node-rank", str(node),
                               "--nproc-per-node", "1", "--master-addr", "127.0.0.1", "--master-port", port,
                               str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for node in (0, 1)]
    outs = [p.communicate(timeout=GUARD_S) for p in nodes]
    for node, (p, (out, err)) in enumerate(zip(nodes, outs)):
        assert p.returncode == 0, err
        # global rank = node_rank * nproc + local rank; each node's local rank 0 uses its cuda:0
        assert f"rank {node} device 0 sum [3.0, 3.0] env ['{node}', '2', '0', '1'" in out, out + err


def test_the_ddp_example_trains_and_keeps_the_replicas_identical():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-m", "rawdev.cli", "run", "--nproc-per-node", "2", "--master-port",
                          str(free_port()), "examples/ddp_digits.py", "--epochs", "2", "--device", "cpu"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=GUARD_S)
    assert res.returncode == 0, res.stdout + res.stderr
    losses = [float(line.split("mean loss ")[1].split()[0]) for line in res.stdout.splitlines() if "mean loss" in line]
    assert len(losses) == 2 and losses[1] < 0.8 * losses[0], res.stdout
    assert "over 1798 samples on 2 ranks" in res.stdout          # 1797 digits, padded to a multiple of 2
    assert "replicas identical: True" in res.stdout


def test_stopping_the_launcher_stops_every_rank(tmp_path):
    script = tmp_path / "sleepy.py"
    script.write_text("import os, sys, time\n"
                      "open(os.path.join(sys.argv[1], 'pid' + os.environ['RANK']), 'w').write(str(os.getpid()))\n"
                      "time.sleep(600)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    launcher = subprocess.Popen([sys.executable, "-m", "rawdev.cli", "run", "--nproc-per-node", "2", "--master-port",
                                 str(free_port()), str(script), str(tmp_path)], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    files = [tmp_path / "pid0", tmp_path / "pid1"]
    deadline = time.monotonic() + GUARD_S
    while not all(f.exists() and f.read_text() for f in files) and time.monotonic() < deadline:
        time.sleep(0.05)
    launcher.terminate()
    _, err = launcher.communicate(timeout=GUARD_S)
    assert launcher.returncode == 128 + 15 and "stopped by SIGTERM; ended all 2 ranks" in err, err
    for f in files:
        assert gone(int(f.read_text()))
