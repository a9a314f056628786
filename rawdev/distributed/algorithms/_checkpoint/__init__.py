"""`torch.distributed.algorithms._checkpoint`: a package of FSDP helpers rawdev refuses."""
