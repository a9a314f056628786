"""`torch.utils.benchmark.op_fuzzers.sparse_unary`: PyTorch's sparse-operand fuzzer, refused: it builds
FuzzedSparseTensors (n-d and hybrid sparse COO tensors), and rawdev's sparse COO tensors are the matrices graph
networks use."""
from ....refusals import refusing_getattr

WHY = ("rawdev has no FuzzedSparseTensor: its sparse COO tensors are matrices, not the n-d hybrid ones this fuzzer "
       "draws; BinaryOpFuzzer and UnaryOpFuzzer build dense operands")
__getattr__ = refusing_getattr("torch.utils.benchmark.op_fuzzers.sparse_unary", "sparse benchmark fuzzers", WHY)
__rawdev_refused__ = __getattr__("_").__rawdev_refused__
