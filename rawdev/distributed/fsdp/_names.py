"""Original (FSDP-prefix-free) names of what the units of an FSDP model manage."""
FSDP_PREFIX = "_fsdp_wrapped_module."


CHECKPOINT_PREFIX = "_checkpoint_wrapped_module."


def clean(name):
    return name.replace(FSDP_PREFIX, "").replace(CHECKPOINT_PREFIX, "")


def module_prefixes(root):
    """id(module) -> its clean name inside root ('' for root), with a trailing '.' when not empty."""
    out = {}
    for name, m in root.named_modules(remove_duplicate=False):
        c = clean(name + ".") if name else ""
        out.setdefault(id(m), "" if c in ("", ".") else c)
    return out


def unit_fqns(root, unit):
    """The clean names of `unit`'s original parameters, one per ParamInfo (the first owner's)."""
    prefixes = module_prefixes(root)
    return [prefixes[id(info.owners[0][0])] + info.owners[0][1] for info in unit._infos]


def all_fqns(root, unit):
    """Every clean name (shared parameters: each owner's) of `unit`'s original parameters."""
    prefixes = module_prefixes(root)
    return [prefixes[id(mod)] + name for info in unit._infos for mod, name in info.owners]
