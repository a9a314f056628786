"""`torch.distributed.elastic.multiprocessing`: only `errors.record` (see errors.py)."""
