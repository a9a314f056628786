"""rawdev.distributions, shaped like torch.distributions: Categorical, OneHotCategorical, Bernoulli, Normal,
Uniform, Independent, Exponential, Laplace, Cauchy, LogNormal, Gamma, Beta, Dirichlet, Poisson, Geometric,
MultivariateNormal, kl_divergence/register_kl. Each is composed of rawdev's tensor ops, so it runs on the
parameters' device (cpu or cuda) with autograd; samples come from rawdev's generators (Philox on cuda)."""
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
from .distribution import Distribution
from .families import Bernoulli, Categorical, Independent, Normal, OneHotCategorical, Uniform
from .kl import kl_divergence, register_kl

__all__ = ["Distribution", "Categorical", "OneHotCategorical", "Bernoulli", "Normal", "Uniform", "Independent",
           "kl_divergence", "register_kl", "Exponential", "Laplace", "Cauchy", "LogNormal", "Gamma", "Beta",
           "Dirichlet", "Poisson", "Geometric", "MultivariateNormal"]
