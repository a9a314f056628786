"""A wrong world size: ranks started with different world sizes, WORLD_SIZE larger than the ranks started, and a
two-node job of which one node was launched. Every rank that runs fails within its timeout with an error naming
what is wrong, and no process is left behind."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _dist_ranks import free_port, gone, run_ranks

ROOT = Path(__file__).resolve().parent.parent
GUARD_S = 120        # hang guard only; each job takes a few seconds
TIMEOUT_S = 3        # the ranks' init_process_group timeout
INIT = f"dist.init_process_group('gloo', timeout={TIMEOUT_S})\n"
BODY = "print('joined', flush=True)\n"


def _failed_in_time(rk, wording):
    assert rk.rc != 0 and "joined" not in rk.out, rk
    assert wording in rk.err, rk
    assert "Traceback" in rk.err and "RuntimeError: rawdev.distributed: init_process_group" in rk.err, rk


@pytest.mark.parametrize("sizes", [(2, 3), (3, 2)])
def test_ranks_given_different_world_sizes_all_fail_naming_the_mismatch(tmp_path, sizes):
    ranks = run_ranks(tmp_path, BODY, 2, init=INIT, guard=GUARD_S,
                      rank_env=lambda r: {"WORLD_SIZE": str(sizes[r])})
    # rank 1 compares with rank 0's post at once
    _failed_in_time(ranks[1], f"init_process_group on rank 1: world_size mismatch: this rank has world_size "
                              f"{sizes[1]} but rank 0 has world_size {sizes[0]}")
    if sizes[0] < sizes[1]:      # rank 0 has every post it waits for, and sees rank 1's other size
        _failed_in_time(ranks[0], "init_process_group on rank 0: world_size mismatch: this rank has world_size 2 "
                                  "but rank 1 has world_size 3")
    else:                        # rank 0 waits for a rank 2 that does not exist, then names it and the mismatch
        _failed_in_time(ranks[0], f"timed out after {TIMEOUT_S} s on rank 0: rank(s) [2] of world_size 3 never "
                                  f"joined")
        assert "world_size mismatch: rank 1 has world_size 2" in ranks[0].err, ranks[0]


def test_world_size_larger_than_the_ranks_started_names_the_missing_ranks(tmp_path):
    ranks = run_ranks(tmp_path, BODY, 2, init=INIT, guard=GUARD_S, env={"WORLD_SIZE": "3"})
    for rk in ranks:
        _failed_in_time(rk, f"timed out after {TIMEOUT_S} s on rank {rk.rank}: rank(s) [2] of world_size 3 never "
                            f"joined")



def test_one_node_of_two_launched_fails_with_the_missing_ranks_and_leaves_no_process(tmp_path):
    script = tmp_path / "job.py"
    script.write_text("import os, sys\n"
                      "open(os.path.join(sys.argv[1], 'pid' + os.environ['RANK']), 'w').write(str(os.getpid()))\n"
                      "import rawdev.distributed as dist\n"
                      f"dist.init_process_group('gloo', timeout={TIMEOUT_S})\n"
                      "print('joined', flush=True)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-m", "rawdev.cli", "run", "--nnodes", "2", "--node-rank", "0",
                          "--nproc-per-node", "2", "--master-port", str(free_port()), str(script), str(tmp_path)],
                         env=env, capture_output=True, text=True, timeout=GUARD_S)
    assert res.returncode == 1 and "joined" not in res.stdout, res.stdout + res.stderr
    assert "failed with exit status 1" in res.stderr, res.stderr
    assert "rank(s) [2, 3] of world_size 4 never joined" in res.stderr, res.stderr
    pids = [int((tmp_path / f"pid{r}").read_text()) for r in (0, 1)]
    deadline = time.monotonic() + 10
    while not all(gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(gone(p) for p in pids), pids
