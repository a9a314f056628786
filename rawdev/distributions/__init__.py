"""rawdev.distributions, shaped like torch.distributions: Categorical, OneHotCategorical, Bernoulli, Normal,
Uniform, Independent, Exponential, Laplace, Cauchy, LogNormal, Gamma, Beta, Dirichlet, Poisson, Geometric,
MultivariateNormal, Binomial, Multinomial, NegativeBinomial, StudentT, Chi2, InverseGamma, MixtureSameFamily,
TransformedDistribution and the families built on it (Gumbel, HalfNormal, HalfCauchy, Weibull, Pareto,
LogisticNormal, RelaxedBernoulli, RelaxedOneHotCategorical), the constraints and transforms modules,
kl_divergence/register_kl. Each is composed of rawdev's tensor ops, so it runs on the parameters' device (cpu or
cuda) with autograd; samples come from rawdev's generators (Philox on cuda)."""
from . import constraints, transforms
from .continuous import (
                         Beta,
                         Cauchy,
                         Dirichlet,
                         Exponential,
                         Gamma,
                         Geometric,
                         Laplace,
                         LogNormal,
                         MultivariateNormal,
                         Poisson,
)
from .counts import Binomial, Chi2, InverseGamma, MixtureSameFamily, Multinomial, NegativeBinomial, StudentT
from .distribution import Distribution
from .families import Bernoulli, Categorical, Independent, Normal, OneHotCategorical, Uniform
from .kl import kl_divergence, register_kl
from .transformed import (
                          ExpRelaxedCategorical,
                          Gumbel,
                          HalfCauchy,
                          HalfNormal,
                          LogisticNormal,
                          LogitRelaxedBernoulli,
                          Pareto,
                          RelaxedBernoulli,
                          RelaxedOneHotCategorical,
                          TransformedDistribution,
                          Weibull,
)
from .transforms import (
                         AbsTransform,
                         AffineTransform,
                         ComposeTransform,
                         CumulativeDistributionTransform,
                         ExpTransform,
                         IndependentTransform,
                         LowerCholeskyTransform,
                         PowerTransform,
                         ReshapeTransform,
                         SigmoidTransform,
                         SoftmaxTransform,
                         SoftplusTransform,
                         StickBreakingTransform,
                         TanhTransform,
                         Transform,
                         biject_to,
                         identity_transform,
                         transform_to,
)

__all__ = ["Distribution", "Categorical", "OneHotCategorical", "Bernoulli", "Normal", "Uniform", "Independent",
           "kl_divergence", "register_kl", "Exponential", "Laplace", "Cauchy", "LogNormal", "Gamma", "Beta",
           "Dirichlet", "Poisson", "Geometric", "MultivariateNormal", "Binomial", "Multinomial", "NegativeBinomial",
           "StudentT", "Chi2", "InverseGamma", "MixtureSameFamily", "TransformedDistribution", "Gumbel", "HalfNormal",
           "HalfCauchy", "Weibull", "Pareto", "LogisticNormal", "RelaxedBernoulli", "LogitRelaxedBernoulli",
           "RelaxedOneHotCategorical", "ExpRelaxedCategorical", "constraints", "transforms", "Transform",
           "ComposeTransform", "IndependentTransform", "ReshapeTransform", "ExpTransform", "PowerTransform",
           "SigmoidTransform", "TanhTransform", "SoftplusTransform", "AbsTransform", "AffineTransform",
           "SoftmaxTransform", "StickBreakingTransform", "LowerCholeskyTransform",
           "CumulativeDistributionTransform", "identity_transform", "biject_to", "transform_to"]
