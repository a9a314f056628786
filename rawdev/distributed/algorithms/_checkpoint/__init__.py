"""`torch.distributed.algorithms._checkpoint`: the activation-checkpoint wrappers (checkpoint_wrapper)."""
